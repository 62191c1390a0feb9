"""The relay: the Messages API for students' Rovers, forwarded upstream with the instructor's key.

A student's class token stands in for an API key (sent as `x-api-key` or `Authorization: Bearer`); the relay
swaps it for the real key, which never leaves the instructor's machine. `/v1/messages` costs budget:
before forwarding, the request's worst case (an estimate of its input plus its `max_tokens`) is reserved
atomically in the store (a request that may bring input its body does not show, past any bound, is refused), and the real usage settles it afterwards, so many requests at once cannot
overdraw a budget. `/v1/messages/count_tokens` and `/v1/models` are forwarded free. Errors come back in
the Messages API's own shape; the ones retrying cannot fix say so (`x-should-retry`).
"""
from __future__ import annotations

import json
import logging

import anyio
import httpx
from fastapi import Request
from fastapi.responses import Response, StreamingResponse

from grader.classroom.payloads import TooLarge, TooSlow, read_body
from grader.classroom.refusals import Refused, error
from grader.classroom.store import Store, Student, Unavailable
from grader.classroom.usage import StreamUsage, context_window, estimate_input, unseen_input, usage_of

ANTHROPIC = "https://api.anthropic.com"
MAX_REQUEST = 8 * 1024 * 1024  # a quarter of the Messages API's own 32 MB: a whole class's worth of Rover requests is far smaller
MAX_BRACKETS = 200_000  # JSON objects and arrays (strings' brackets included) one request may hold: parsing stays short
DEFAULT_MAX_TOKENS = 4096  # reserved for a request that names none (upstream will refuse it, and the hold goes back)
PASSED_BACK = ("content-type", "request-id", "retry-after", "x-should-retry")
log = logging.getLogger("uvicorn.error")


class Relay:
    def __init__(self, store: Store, api_key: str, budget: int, upstream: str = ANTHROPIC, connections: int = 100):
        self.store, self.api_key, self.budget, self.upstream = store, api_key, budget, upstream.rstrip("/")
        self.client = httpx.AsyncClient(base_url=self.upstream, timeout=httpx.Timeout(600, connect=10), trust_env=False,
                                        limits=httpx.Limits(max_connections=connections, max_keepalive_connections=min(50, connections)))
        store.release_reservations()  # nothing is in flight before the relay starts

    async def close(self) -> None:
        await self.client.aclose()

    async def messages(self, request: Request) -> Response:
        student = self._student(request)
        body, parsed, cost = await _json_body(request, window=context_window(request.headers.get("anthropic-beta")))
        if unseen := unseen_input(parsed):
            raise Refused(400, f"this class relay does not forward a request with {unseen}: it brings in input the request "
                               "does not show, so its cost cannot be held against your budget first; leave it out, or use "
                               "your own ANTHROPIC_API_KEY for it")
        max_tokens = parsed.get("max_tokens") if isinstance(parsed.get("max_tokens"), int) and parsed["max_tokens"] > 0 else DEFAULT_MAX_TOKENS
        need = cost + max_tokens
        if not self.store.reserve(student, need, self.budget):
            student = self.store.seat(student.name) or student  # the figures as they are now
            left = max(0, self.budget - student.tokens - student.reserved)
            spent = f"your class budget of {self.budget:,} tokens is spent ({student.tokens:,} used)" if student.tokens >= self.budget else (
                f"this request could use up to {need:,} tokens (about {cost:,} in, max_tokens {max_tokens:,}) and your class budget "
                f"of {self.budget:,} has {left:,} left" + (f" ({student.reserved:,} held by requests in flight)" if student.reserved else ""))
            raise Refused(429, spent + _what_to_do(left - cost if student.tokens < self.budget else 0))
        try:
            upstream = await self._send("POST", "/v1/messages", request, body)
        except BaseException:
            self.store.settle(student, need, 0, 0, counted=False)
            raise
        if upstream.status_code == 200 and parsed.get("stream") is True:
            return _StreamOut(_Stream(self.store, upstream, student, need, cost), headers=_passed_back(upstream))
        tokens_in = tokens_out = 0
        try:
            content = await upstream.aread()
            if upstream.status_code == 200:  # an answer without usage is charged as the worst case, never as free
                tokens_in, tokens_out = usage_of(content)
                if tokens_in + tokens_out == 0:
                    tokens_in, tokens_out = cost, max_tokens
        except BaseException as problem:  # cut while reading: upstream may have billed it, so the reservation is charged
            tokens_in, tokens_out = cost, max_tokens
            if isinstance(problem, httpx.HTTPError):
                raise Refused(502, f"the upstream API at {self.upstream} cut its answer short") from None
            raise
        finally:
            self.store.settle(student, need, tokens_in, tokens_out, counted=tokens_in + tokens_out > 0)
            with anyio.CancelScope(shield=True):
                await upstream.aclose()
        return Response(content, status_code=upstream.status_code, headers=_passed_back(upstream))

    async def free(self, request: Request, path: str) -> Response:
        """count_tokens and the models list: forwarded for any seated student, costing no budget."""
        self._student(request)
        body = (await _json_body(request))[0] if request.method == "POST" else b""
        upstream = await self._send(request.method, path, request, body)
        try:
            content = await upstream.aread()
        finally:
            await upstream.aclose()
        return Response(content, status_code=upstream.status_code, headers=_passed_back(upstream))

    def _student(self, request: Request) -> Student:
        token = request.headers.get("x-api-key") or request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        student = self.store.student_by_token(token) if token else None
        if student is None:
            raise Refused(401, "not a class token: run `workshop join URL CODE --name NAME` in your workspace, "
                               "then start Rover without ANTHROPIC_API_KEY set")
        if student.pending:
            raise Refused(403, "your seat is waiting for the instructor's approval on the board; try again once approved")
        return student

    async def _send(self, method: str, path: str, request: Request, body: bytes) -> httpx.Response:
        # The real key goes upstream the way the student's client sent its token: the SDK's own choice of header.
        auth = {"x-api-key": self.api_key} if request.headers.get("x-api-key") else {"authorization": f"Bearer {self.api_key}"}
        headers = {**auth, "accept-encoding": "identity", "anthropic-version": request.headers.get("anthropic-version", "2023-06-01")}
        if body:
            headers["content-type"] = "application/json"
        if beta := request.headers.get("anthropic-beta"):
            headers["anthropic-beta"] = beta
        outgoing = self.client.build_request(method, path, content=body or None, headers=headers, params=request.query_params)
        try:
            upstream = await self.client.send(outgoing, stream=True)
        except httpx.TimeoutException:
            raise Refused(504, f"the upstream API at {self.upstream} did not answer in time", headers={"x-should-retry": "true"}) from None
        except httpx.HTTPError as problem:
            raise Refused(502, f"the relay could not reach the upstream API at {self.upstream} ({type(problem).__name__})",
                          headers={"x-should-retry": "true"}) from None
        if upstream.status_code in (401, 403):
            await upstream.aclose()
            raise Refused(502, f"the upstream API refused the instructor's key ({upstream.status_code}): "
                               "the instructor should check ANTHROPIC_API_KEY where the board runs")
        return upstream


class _Stream:
    """One streamed answer on its way through: its chunks, its usage, and settling it exactly once however it ends."""

    def __init__(self, store: Store, upstream: httpx.Response, student: Student, need: int, cost: int):
        self.store, self.upstream, self.student, self.need, self.cost = store, upstream, student, need, cost
        self.usage, self.done = StreamUsage(), False

    async def chunks(self):
        try:
            async for chunk in self.upstream.aiter_bytes():
                self.usage.feed(chunk)
                yield chunk
        except httpx.HTTPError as problem:  # upstream cut the stream: the client gets an error event, not a hang
            yield _error_event(f"the upstream API ended the stream early ({type(problem).__name__})")
        finally:
            await self.finish()

    async def finish(self) -> None:
        if self.done:
            return
        self.done = True
        tokens_in, tokens_out = self.usage.charge(self.cost, self.need - self.cost)
        try:
            self.store.settle(self.student, self.need, tokens_in, tokens_out)
        except Unavailable as problem:
            log.warning("relay: the usage of %s was not saved: %s", self.student.name, problem)
        with anyio.CancelScope(shield=True):  # the client may have gone, cancelling us: close upstream all the same
            await self.upstream.aclose()


class _StreamOut(StreamingResponse):
    """A streaming response that settles its stream even when the client leaves before the first chunk."""

    def __init__(self, stream: _Stream, headers: dict[str, str]):
        super().__init__(stream.chunks(), status_code=200, headers=headers)
        self.stream = stream

    async def __call__(self, scope, receive, send) -> None:
        try:
            await super().__call__(scope, receive, send)
        except OSError:  # the client went away mid-stream: nothing to report, the usage is settled below
            pass
        finally:
            with anyio.CancelScope(shield=True):
                await self.stream.finish()


async def _json_body(request: Request, window: int = 0) -> tuple[bytes, dict, int]:
    """The body (read as it streams in, refused past MAX_REQUEST), its JSON and, given the model's context `window`,
    its input estimate.
    Parsing and estimating run in a worker thread, on a body whose count of objects is bounded first, so one
    request cannot hold up the board's event loop (and every other student) for long."""
    try:
        body = await read_body(request, MAX_REQUEST)
    except TooLarge as problem:
        raise Refused(413, str(problem)) from None
    except TooSlow as problem:
        raise Refused(408, str(problem)) from None
    brackets = body.count(b"{") + body.count(b"[")
    if brackets > MAX_BRACKETS:
        raise Refused(413, f"the body holds {brackets:,} JSON objects and arrays; at most {MAX_BRACKETS:,} are accepted")
    parsed, cost = await anyio.to_thread.run_sync(_parse, body, window)
    return body, parsed, cost


def _parse(body: bytes, window: int) -> tuple[dict, int]:
    try:
        parsed = json.loads(body)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than Python parses
        parsed = None
    if not isinstance(parsed, dict):
        raise Refused(400, "the request body is not a JSON object")
    return parsed, estimate_input(parsed, window) if window else 0


def _passed_back(upstream: httpx.Response) -> dict[str, str]:
    return {name: value for name, value in upstream.headers.items() if name in PASSED_BACK or name.startswith("anthropic-ratelimit")}


def _error_event(message: str) -> bytes:
    data = {"type": "error", "error": {"type": "api_error", "message": message}}
    return f"event: error\ndata: {json.dumps(data)}\n\n".encode()


def _what_to_do(room: int) -> str:
    """The advice after a refusal: a smaller max_tokens (Rover's option named) when one would fit, and the budget."""
    smaller = (f"lower max_tokens (under {room:,}: with Rover, `python -m rover --max-tokens {min(room - 1, 4096)} ...`), or "
               if room > 256 else "")
    return f"; {smaller}ask the instructor to raise the budget (`workshop class serve --budget N`)"


def not_relaying() -> Response:
    return error(404, "this class board runs without a relay; the instructor starts one with `workshop class serve --relay`, "
                      "or use your own ANTHROPIC_API_KEY")
