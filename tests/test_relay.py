"""The relay against a fake upstream on loopback: the key stays home, budgets hold, failures read clearly."""
from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import time

import httpx
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

from grader.classroom.board import create_app
from grader.classroom.relay import Relay
from grader.classroom.serving import bind, in_thread
from tests.warm_rover import LazyAnthropic

anthropic = LazyAnthropic()  # imported by the first test that uses it: every xdist worker collects this file

pytestmark = pytest.mark.xdist_group("anthropic")  # with test_live.py: one worker imports the SDK, for both
INSTRUCTOR_KEY = "sk-ant-instructor-only"
USAGE = {"input_tokens": 120, "output_tokens": 30}
MODEL = {"type": "model", "id": "claude-sonnet-5-5", "display_name": "Claude Sonnet 5.5", "created_at": "2026-01-01T00:00:00Z"}


class FakeUpstream:
    """The Messages API as the relay sees it; the request's model name picks the behaviour."""

    def __init__(self):
        self.seen: list[dict] = []
        self.in_flight = self.peak = 0
        self.crowd = asyncio.Event()
        self.app = FastAPI()
        self.app.post("/v1/messages")(self.messages)
        self.app.post("/v1/messages/count_tokens")(self.count_tokens)
        self.app.get("/v1/models")(self.models)
        self.app.get("/v1/models/{model_id}")(self.model)

    async def count_tokens(self, request: Request):
        self.seen.append({"path": request.url.path, "key": _key(request), "body": await request.json()})
        return {"input_tokens": 42}

    async def models(self, request: Request):
        self.seen.append({"path": request.url.path, "key": _key(request), "query": dict(request.query_params)})
        return {"data": [MODEL], "has_more": False, "first_id": MODEL["id"], "last_id": MODEL["id"]}

    async def model(self, model_id: str):
        if model_id != MODEL["id"]:
            return JSONResponse({"type": "error", "error": {"type": "not_found_error", "message": f"model: {model_id}"}}, 404)
        return MODEL

    async def messages(self, request: Request):
        body = await request.json()
        bearer = request.headers.get("authorization", "").removeprefix("Bearer ")
        self.seen.append({"key": request.headers.get("x-api-key") or bearer, "header": "x-api-key" if request.headers.get("x-api-key") else "authorization",
                          "version": request.headers.get("anthropic-version"), "headers": dict(request.headers), "body": body})
        model = body["model"]
        if model == "busy":
            return JSONResponse({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}, 429, headers={"retry-after": "7"})
        if model == "wrong-key":
            return JSONResponse({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}, 401)
        if model == "crowd":  # answers only once 20 requests are in flight at the same time
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            if self.in_flight >= 20:
                self.crowd.set()
            await asyncio.wait_for(self.crowd.wait(), 10)
            self.in_flight -= 1
        if model == "reads-documents":  # each request's documents cost 200,000 input tokens by the upstream's count
            await asyncio.sleep(0.2)
            return {"id": "msg_d", "type": "message", "role": "assistant", "model": model, "stop_reason": "end_turn",
                    "stop_sequence": None, "content": [{"type": "text", "text": "read"}], "usage": {"input_tokens": 200_000, "output_tokens": 50}}
        if model == "worst-case":  # spends every token it may: the budget's hardest test
            await asyncio.sleep(0.2)
            usage = {"input_tokens": 10, "output_tokens": body["max_tokens"]}
            if body.get("stream"):
                return StreamingResponse(_events(usage_in_delta=usage), media_type="text/event-stream")
            return {"id": "msg_w", "type": "message", "role": "assistant", "model": model, "stop_reason": "max_tokens",
                    "stop_sequence": None, "content": [{"type": "text", "text": "..."}], "usage": usage}
        if body.get("stream"):
            shape = {"cut": {"cut": True}, "litellm": {"usage_in_delta": {"input_tokens": 1200, "output_tokens": 40}, "input_at_start": 0},
                     "slow": {"pause": 0.5}}.get(model, {})
            return StreamingResponse(_events(**shape), media_type="text/event-stream")
        return {"id": "msg_1", "type": "message", "role": "assistant", "model": model, "stop_reason": "end_turn",
                "stop_sequence": None, "content": [{"type": "text", "text": "hello from upstream"}], "usage": USAGE}


def _key(request: Request) -> str | None:
    return request.headers.get("x-api-key") or request.headers.get("authorization", "").removeprefix("Bearer ") or None


async def _events(cut: bool = False, usage_in_delta: dict | None = None, input_at_start: int = 200, pause: float = 0.01):
    """A streamed answer; `cut`: the connection ends after the text, before message_delta (usage) and message_stop;
    `usage_in_delta`: the usage message_delta carries (a LiteLLM proxy reports the input tokens only there)."""
    events = [
        ("message_start", {"type": "message_start", "message": {"id": "msg_2", "type": "message", "role": "assistant", "model": "m", "content": [],
                                                                "stop_reason": None, "stop_sequence": None,
                                                                "usage": {"input_tokens": input_at_start, "output_tokens": 1}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "streamed "}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hello"}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                           "usage": usage_in_delta or {"output_tokens": 40}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    for name, data in events[:5] if cut else events:
        yield f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
        await asyncio.sleep(pause)
    if cut:
        raise ConnectionResetError("cut")  # uvicorn drops the connection mid-stream


@pytest.fixture
def upstream():
    fake = FakeUpstream()
    with in_thread(fake.app) as url:
        fake.url = url
        yield fake


def relayed(store, upstream_url: str, budget: int = 10_000):
    return in_thread(create_app(store, Relay(store, INSTRUCTOR_KEY, budget, upstream_url)))


def sdk(url: str, token: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=url, api_key=token, max_retries=0)


def ask(client: anthropic.Anthropic, model: str = "claude-sonnet-5-5"):
    return client.messages.create(model=model, max_tokens=64, messages=[{"role": "user", "content": "hi"}])


def test_a_student_token_gets_an_answer_and_the_key_stays_with_the_instructor(store, upstream):
    ada, token = store.join("Ada")
    with relayed(store, upstream.url) as url:
        reply = ask(sdk(url, token))
        board = httpx.get(f"{url}/api/board", params={"token": store.instructor_token}).text
    assert reply.content[0].text == "hello from upstream"
    assert upstream.seen[0]["key"] == INSTRUCTOR_KEY and upstream.seen[0]["version"]  # the SDK's own version, passed on
    assert upstream.seen[0]["body"]["messages"] == [{"role": "user", "content": "hi"}]
    assert token not in json.dumps(upstream.seen[0]["headers"])  # the class token stops at the relay
    assert (store.students()[0].tokens_in, store.students()[0].tokens_out, store.students()[0].requests) == (120, 30, 1)
    assert "<th>tokens (of 10k)</th>" in board and '<span title="150 of 10,000">150 · 1%</span>' in board


def test_a_stream_passes_through_and_its_usage_counts(store, upstream):
    _, token = store.join("Ada")
    with relayed(store, upstream.url) as url:
        with sdk(url, token).messages.stream(model="m", max_tokens=64, messages=[{"role": "user", "content": "hi"}]) as stream:
            text = "".join(stream.text_stream)
    assert text == "streamed hello" and upstream.seen[0]["body"]["stream"] is True
    assert (store.students()[0].tokens_in, store.students()[0].tokens_out) == (200, 40)


def test_a_429_from_upstream_comes_back_as_it_was(store, upstream):
    _, token = store.join("Ada")
    with relayed(store, upstream.url) as url:
        with pytest.raises(anthropic.RateLimitError) as raised:
            ask(sdk(url, token), model="busy")
    assert raised.value.response.headers["retry-after"] == "7" and "slow down" in str(raised.value)
    assert store.students()[0].tokens == 0


def test_a_wrong_class_token_is_a_401_and_never_reaches_upstream(store, upstream):
    store.join("Ada")
    with relayed(store, upstream.url) as url:
        with pytest.raises(anthropic.AuthenticationError) as raised:
            ask(sdk(url, "class-not-a-real-token"))
        bare = httpx.post(f"{url}/v1/messages", json={"model": "m"})
    assert "workshop join" in raised.value.message and bare.status_code == 401
    assert upstream.seen == []


def test_upstream_refusing_the_instructors_key_says_whose_key_it_is(store, upstream):
    _, token = store.join("Ada")
    with relayed(store, upstream.url) as url:
        answer = httpx.post(f"{url}/v1/messages", json={"model": "wrong-key"}, headers={"x-api-key": token})
    assert answer.status_code == 502 and answer.headers["x-should-retry"] == "false"
    assert (upstream.seen[0]["key"], upstream.seen[0]["header"]) == (INSTRUCTOR_KEY, "x-api-key")  # sent the way the token came
    assert upstream.seen[0]["version"] == "2023-06-01"  # a client that sends none gets the relay's default
    assert "refused the instructor's key (401)" in answer.json()["error"]["message"]


def test_a_spent_budget_is_a_clear_429_that_the_sdk_does_not_retry(store, upstream):
    _, token = store.join("Ada")
    with relayed(store, upstream.url, budget=100) as url:
        ask(sdk(url, token))  # 150 tokens: over the budget of 100 after this one
        with pytest.raises(anthropic.RateLimitError) as raised:
            ask(anthropic.Anthropic(base_url=url, api_key=token, max_retries=2))
    assert "budget of 100 tokens is spent (150 used)" in raised.value.message
    assert raised.value.response.headers["x-should-retry"] == "false"
    assert len(upstream.seen) == 1  # neither the refused call nor any retry reached upstream


def test_upstream_down_is_a_502_naming_it(store):
    _, token = store.join("Ada")
    closed = bind("127.0.0.1", 0)
    down = f"http://127.0.0.1:{closed.getsockname()[1]}"
    closed.close()
    with relayed(store, down) as url:
        answer = httpx.post(f"{url}/v1/messages", json={"model": "m"}, headers={"x-api-key": token}, timeout=10)
    assert answer.status_code == 502 and f"could not reach the upstream API at {down}" in answer.json()["error"]["message"]
    assert store.students()[0].requests == 0


def test_without_relay_the_board_says_so(store):
    _, token = store.join("Ada")
    with in_thread(create_app(store)) as url:
        answer = httpx.post(f"{url}/v1/messages", json={"model": "m"}, headers={"x-api-key": token})
    assert answer.status_code == 404 and "--relay" in answer.json()["error"]["message"]


def test_twenty_concurrent_requests_are_forwarded_side_by_side(store, upstream):
    tokens = [store.join(f"student {number}")[1] for number in range(20)]

    async def everyone(url: str) -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=url, timeout=30) as http:
            return await asyncio.gather(*(http.post("/v1/messages", json={"model": "crowd"}, headers={"x-api-key": token}) for token in tokens))

    with relayed(store, upstream.url) as url:
        started = time.monotonic()
        answers = asyncio.run(everyone(url))
        took = time.monotonic() - started
    assert [answer.status_code for answer in answers] == [200] * 20
    assert upstream.peak == 20  # the upstream answers none until all 20 are waiting on it at once
    print(f"\n20 concurrent relayed requests: {took:.2f} s, peak in flight upstream {upstream.peak}")


def test_rover_uses_the_class_relay_when_no_key_is_set(store, upstream, workspace, warm_rover):
    folder = workspace(1)
    subprocess.run(["git", "init", "-q"], cwd=folder, check=True)
    _, token = store.join("Ada")
    with relayed(store, upstream.url) as url:
        (folder / ".git" / "workshop-class.json").write_text(json.dumps({"url": url, "code": store.code, "name": "Ada", "token": token, "relay": True}))
        env = {key: value for key, value in os.environ.items() if not key.startswith("ANTHROPIC_")}
        done = warm_rover.run(folder, ("say hi", "--quiet"), env)  # python -m rover, forked with the SDK imported
        own = {**env, "ANTHROPIC_API_KEY": "sk-students-own", "ANTHROPIC_BASE_URL": upstream.url}
        mine = warm_rover.run(folder, ("say hi", "--quiet"), own)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "hello from upstream"
    assert upstream.seen[0]["key"] == INSTRUCTOR_KEY
    assert mine.returncode == 0 and upstream.seen[1]["key"] == "sk-students-own"  # a key of one's own wins over the class's
    assert store.students()[0].requests == 1


def test_a_join_made_before_the_board_relayed_carries_over_and_a_board_without_one_says_so(store, upstream, workspace, warm_rover):
    folder = workspace(1)
    subprocess.run(["git", "init", "-q"], cwd=folder, check=True)
    _, token = store.join("Ada")
    env = {key: value for key, value in os.environ.items() if not key.startswith("ANTHROPIC_")}

    def rover(*args: str) -> subprocess.CompletedProcess:
        return warm_rover.run(folder, ("say hi", "--quiet", *args), env)  # python -m rover, forked with the SDK imported

    with in_thread(create_app(store)) as url:  # joined while the board had no relay
        (folder / ".git" / "workshop-class.json").write_text(json.dumps({"url": url, "code": store.code, "name": "Ada", "token": token, "relay": False}))
        plain = rover()
    assert plain.returncode == 1 and plain.stderr.count("\n") == 1, plain.stderr
    assert "rover: the class board answered: this class board runs without a relay" in plain.stderr and "model" not in plain.stderr
    with relayed(store, upstream.url) as again:  # served again from the same class file, now with --relay
        joined = json.loads((folder / ".git" / "workshop-class.json").read_text())
        (folder / ".git" / "workshop-class.json").write_text(json.dumps({**joined, "url": again}))  # its port, this time
        relayed_now = rover("--max-tokens", "300")
    assert relayed_now.returncode == 0 and relayed_now.stdout.strip() == "hello from upstream", relayed_now.stderr
    assert upstream.seen[-1]["body"]["max_tokens"] == 300 and upstream.seen[-1]["key"] == INSTRUCTOR_KEY


def test_the_relays_429_names_rovers_max_tokens_option(store, upstream):
    _, token = store.join("Ada")
    with relayed(store, upstream.url, budget=5_000) as url:
        with pytest.raises(anthropic.RateLimitError) as raised:
            sdk(url, token).messages.create(model="m", max_tokens=8192, messages=[{"role": "user", "content": "hi"}])
        fits = sdk(url, token).messages.create(model="m", max_tokens=4000, messages=[{"role": "user", "content": "hi"}])
    said = raised.value.message
    option = re.search(r"`python -m rover --max-tokens (\d+) \.\.\.`", said)
    assert option and "under 4,9" in said, said
    assert fits.content[0].text == "hello from upstream" and int(option[1]) <= 4096


def test_an_oversized_request_is_refused_before_it_is_read(store):
    from fastapi.testclient import TestClient

    from grader.classroom.relay import MAX_REQUEST

    _, token = store.join("Ada")
    with TestClient(create_app(store, Relay(store, INSTRUCTOR_KEY, 10_000, "http://127.0.0.1:9"))) as client:
        answer = client.post("/v1/messages", content=b"x" * (MAX_REQUEST + 1), headers={"x-api-key": token})
        broken = client.post("/v1/messages", content=b"[1, 2]", headers={"x-api-key": token})
    assert answer.status_code == 413 and answer.json()["error"]["type"] == "request_too_large"
    assert broken.status_code == 400 and "not a JSON object" in broken.json()["error"]["message"]


def test_head_and_get_slash_answer_and_unknown_paths_use_the_api_error_shape(store, upstream):
    with relayed(store, upstream.url) as url:
        head, get = httpx.head(f"{url}/"), httpx.get(f"{url}/")
        missing = httpx.post(f"{url}/v1/complete", json={})
        wrong_method = httpx.get(f"{url}/v1/messages")
    assert head.status_code == 200 and get.status_code == 200 and "class board" in get.text and "with an API relay" in get.text
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "not_found_error"
    assert wrong_method.status_code == 405 and wrong_method.json()["type"] == "error"


def test_count_tokens_and_the_models_list_are_forwarded_free(store, upstream):
    _, token = store.join("Ada")
    with relayed(store, upstream.url, budget=10) as url:  # a budget too small for any message: these cost none of it
        client = sdk(url, token)
        counted = client.messages.count_tokens(model="claude-sonnet-5-5", messages=[{"role": "user", "content": "hi"}])
        listed = [model.id for model in client.models.list(limit=5)]
        one = client.models.retrieve("claude-sonnet-5-5")
        with pytest.raises(anthropic.NotFoundError):
            client.models.retrieve("no-such-model")
        with pytest.raises(anthropic.AuthenticationError):
            sdk(url, "class-wrong").models.list()
    assert counted.input_tokens == 42 and listed == ["claude-sonnet-5-5"] and one.display_name == "Claude Sonnet 5.5"
    assert {seen["key"] for seen in upstream.seen} == {INSTRUCTOR_KEY}, upstream.seen
    assert upstream.seen[1]["query"] == {"limit": "5"}
    assert store.students()[0].tokens == 0 and store.students()[0].requests == 0


def test_a_seat_waiting_for_approval_cannot_use_the_relay(store, upstream):
    _, token = store.join("Ada", pending=True)
    with relayed(store, upstream.url) as url:
        with pytest.raises(anthropic.PermissionDeniedError) as raised:
            ask(sdk(url, token))
    assert "waiting for the instructor's approval" in raised.value.message and upstream.seen == []
