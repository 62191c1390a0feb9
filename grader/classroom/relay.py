"""The relay: `/v1/messages` for students' Rovers, forwarded upstream with the instructor's key.

A student's class token stands in for an API key (sent as `x-api-key` or `Authorization: Bearer`); the relay
swaps it for the real key, which never leaves the instructor's machine, and counts each
student's tokens against the budget. Errors come back in the Messages API's own error shape, so
Rover's usual one-line messages apply; the ones retrying cannot fix say so (`x-should-retry`).
"""
from __future__ import annotations

import json

import httpx
from fastapi import Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from grader.classroom.payloads import TooLarge, read_body
from grader.classroom.store import Store, Student

ANTHROPIC = "https://api.anthropic.com"
MAX_REQUEST = 16 * 1024 * 1024
PASSED_BACK = ("content-type", "request-id", "retry-after", "x-should-retry")


class Relay:
    def __init__(self, store: Store, api_key: str, budget: int, upstream: str = ANTHROPIC):
        self.store, self.api_key, self.budget, self.upstream = store, api_key, budget, upstream.rstrip("/")
        self.client = httpx.AsyncClient(base_url=self.upstream, timeout=httpx.Timeout(600, connect=10),
                                        limits=httpx.Limits(max_connections=200, max_keepalive_connections=50))

    async def close(self) -> None:
        await self.client.aclose()

    async def messages(self, request: Request) -> Response:
        token = request.headers.get("x-api-key") or request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        student = self.store.student_by_token(token) if token else None
        if student is None:
            return error(401, "authentication_error", "not a class token: run `workshop join URL CODE --name NAME` in your workspace, "
                                                      "then start Rover without ANTHROPIC_API_KEY set")
        if student.tokens >= self.budget:
            return error(429, "rate_limit_error", f"your class budget of {self.budget:,} tokens is spent ({student.tokens:,} used); "
                                                  "ask the instructor to raise it (workshop class serve --budget N)")
        try:
            body = await read_body(request, MAX_REQUEST)
        except TooLarge as problem:
            return error(413, "request_too_large", str(problem))
        try:
            streaming = json.loads(body).get("stream") is True
        except (ValueError, AttributeError):
            return error(400, "invalid_request_error", "the request body is not a JSON object")
        # The real key goes upstream the way the student's client sent its token: the SDK's own choice of header.
        auth = {"x-api-key": self.api_key} if request.headers.get("x-api-key") else {"authorization": f"Bearer {self.api_key}"}
        headers = {**auth, "content-type": "application/json", "accept-encoding": "identity",
                   "anthropic-version": request.headers.get("anthropic-version", "2023-06-01")}
        if beta := request.headers.get("anthropic-beta"):
            headers["anthropic-beta"] = beta
        try:
            upstream = await self.client.send(self.client.build_request("POST", "/v1/messages", content=body, headers=headers), stream=True)
        except httpx.TimeoutException:
            return error(504, "timeout_error", f"the upstream API at {self.upstream} did not answer in time", retry=True)
        except httpx.HTTPError as problem:
            return error(502, "api_error", f"the relay could not reach the upstream API at {self.upstream} ({type(problem).__name__})", retry=True)
        passed_back = {name: value for name, value in upstream.headers.items()
                       if name in PASSED_BACK or name.startswith("anthropic-ratelimit")}
        if upstream.status_code in (401, 403):
            await upstream.aclose()
            return error(502, "api_error", f"the upstream API refused the instructor's key ({upstream.status_code}): "
                                           "the instructor should check ANTHROPIC_API_KEY where the board runs")
        if streaming and upstream.status_code == 200:
            return StreamingResponse(self._pass_through(upstream, student), status_code=200, headers=passed_back)
        content = await upstream.aread()
        await upstream.aclose()
        if upstream.status_code == 200:
            self._count(student, _usage(content))
        return Response(content, status_code=upstream.status_code, headers=passed_back)

    async def _pass_through(self, upstream: httpx.Response, student: Student):
        """Hand each chunk on as it arrives, reading the usage from the events on the way."""
        usage = _StreamUsage()
        try:
            async for chunk in upstream.aiter_bytes():
                usage.feed(chunk)
                yield chunk
        finally:
            await upstream.aclose()
            self._count(student, (usage.tokens_in, usage.tokens_out))

    def _count(self, student: Student, usage: tuple[int, int]) -> None:
        self.store.add_usage(student, *usage)


def error(status: int, kind: str, message: str, retry: bool = False) -> JSONResponse:
    """An error in the Messages API's shape, saying whether the SDK's retries could help."""
    return JSONResponse({"type": "error", "error": {"type": kind, "message": message}}, status_code=status,
                        headers={"x-should-retry": "true" if retry else "false"})


def _usage(content: bytes) -> tuple[int, int]:
    try:
        usage = json.loads(content).get("usage") or {}
    except (ValueError, AttributeError):
        return 0, 0
    return _tokens_in(usage), _int(usage.get("output_tokens"))


def _tokens_in(usage: dict) -> int:
    return sum(_int(usage.get(key)) for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))


def _int(value: object) -> int:
    return value if isinstance(value, int) and value >= 0 else 0


class _StreamUsage:
    """Reads `message_start` (input tokens) and `message_delta` (output so far) from a server-sent event stream."""

    def __init__(self):
        self.buffer = b""
        self.tokens_in = self.tokens_out = 0

    def feed(self, chunk: bytes) -> None:
        self.buffer += chunk
        *lines, self.buffer = self.buffer.split(b"\n")
        for line in lines:
            if line.startswith(b"data:") and b'"usage"' in line:
                self._event(line[5:])

    def _event(self, data: bytes) -> None:
        try:
            event = json.loads(data)
        except ValueError:
            return
        if event.get("type") == "message_start":
            self.tokens_in = _tokens_in(event.get("message", {}).get("usage") or {})
        elif event.get("type") == "message_delta":
            self.tokens_out = max(self.tokens_out, _int((event.get("usage") or {}).get("output_tokens")))
