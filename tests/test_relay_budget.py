"""Relay budgets as reservations: many requests at once, cut streams, usage wherever the stream reports it."""
from __future__ import annotations

import asyncio
import socket
import time

import httpx
import pytest

from grader.classroom.relay import Relay
from tests.test_relay import INSTRUCTOR_KEY, relayed, sdk, upstream  # noqa: F401 (upstream: the fixture)

pytestmark = pytest.mark.xdist_group("anthropic")  # its SDK client: imported once, on test_relay.py's worker


def held_and_used(store) -> tuple[int, int]:
    ada = store.students()[0]
    return ada.reserved, ada.tokens


def test_twenty_concurrent_requests_cannot_overdraw_a_budget(store, upstream):
    """The issue's case: 20 requests at once at zero usage, each may spend max_tokens; the budget holds."""
    _, token = store.join("Ada")
    budget, max_tokens = 500_000, 100_000

    async def everyone(url: str, stream: bool) -> list[httpx.Response]:
        body = {"model": "worst-case", "max_tokens": max_tokens, "stream": stream, "messages": [{"role": "user", "content": "hi"}]}
        async with httpx.AsyncClient(base_url=url, timeout=30) as http:
            return await asyncio.gather(*(http.post("/v1/messages", json=body, headers={"x-api-key": token}) for _ in range(20)))

    with relayed(store, upstream.url, budget=budget) as url:
        answers = asyncio.run(everyone(url, stream=False)) + asyncio.run(everyone(url, stream=True))
    statuses = [answer.status_code for answer in answers]
    assert statuses.count(200) == 4 and statuses.count(429) == 36  # 4 x (100,000 + its input estimate) fit in 500,000
    assert len([seen for seen in upstream.seen if seen["body"].get("model") == "worst-case"]) == 4  # refused ones never left
    reserved, used = held_and_used(store)
    assert reserved == 0 and used <= budget + max_tokens, used
    refusal = next(answer for answer in answers if answer.status_code == 429).json()
    assert refusal["type"] == "error" and refusal["error"]["type"] == "rate_limit_error"
    assert "could use up to" in refusal["error"]["message"] and "lower max_tokens" in refusal["error"]["message"]


def test_documents_by_url_cannot_overdraw_a_budget(store, upstream):
    """The attack's case: 20 concurrent requests, each a PDF by URL the upstream counts as 200,000 input tokens.
    Each reserves its model's whole context window, so the budget is passed by less than one max_tokens."""
    _, token = store.join("Ada")
    budget, max_tokens = 500_000, 1_000
    document = {"type": "document", "source": {"type": "url", "url": "https://example.com/big.pdf"}}
    body = {"model": "reads-documents", "max_tokens": max_tokens,
            "messages": [{"role": "user", "content": [document, {"type": "text", "text": "summarise"}]}]}

    async def everyone(url: str) -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=url, timeout=30) as http:
            return await asyncio.gather(*(http.post("/v1/messages", json=body, headers={"x-api-key": token}) for _ in range(20)))

    with relayed(store, upstream.url, budget=budget) as url:
        answers = asyncio.run(everyone(url)) + asyncio.run(everyone(url))
    statuses = [answer.status_code for answer in answers]
    assert statuses.count(200) == 2 and statuses.count(429) == 38, statuses  # two 201,000 holds fit in 500,000; a third never
    reserved, used = held_and_used(store)
    assert reserved == 0 and used == 2 * 200_050 and used <= budget + max_tokens


def test_the_estimate_reserves_worst_cases_for_what_its_text_does_not_show():
    from grader.classroom.usage import CONTEXT_WINDOW, IMAGE_TOKENS, LONG_CONTEXT_WINDOW, context_window, estimate_input

    def asking(*blocks, tools=(), window=CONTEXT_WINDOW):
        return estimate_input({"messages": [{"role": "user", "content": list(blocks)}], "tools": list(tools)}, window)

    plain = asking({"type": "text", "text": "hi"})
    pdf = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}}
    by_file = {"type": "document", "source": {"type": "file", "file_id": "file_1"}}
    image = {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}
    text_document = {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "x" * 3000}}
    assert asking(pdf) == asking(by_file) == asking(pdf, by_file) == CONTEXT_WINDOW, "a document's pages: the whole window"
    assert asking(by_file, window=context_window("context-1m-2025-08-07")) == LONG_CONTEXT_WINDOW
    assert IMAGE_TOKENS <= asking(image) < 2 * IMAGE_TOKENS
    assert 1000 <= asking(text_document) < 2000  # a text document is counted by its text
    assert asking({"type": "text", "text": "x" * 3_000_000}) == CONTEXT_WINDOW, "no input passes the window"
    assert asking(tools=[{"name": "read_file", "input_schema": {"type": "object"}}]) < plain + 100  # a client tool: its text


def test_what_brings_input_the_body_does_not_show_is_refused_and_never_leaves(store, upstream):
    """Issue 25: 100 concurrent streams with an MCP server spent 15 M tokens against a 500 k budget, reserved at their
    visible size. What no reservation can bound (mcp_servers, a container, server tools) is refused in the API's
    shape; client tools (custom, bash, text editor) still pass."""
    _, token = store.join("Ada")
    ask = {"model": "claude-sonnet-5-5", "max_tokens": 100, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    refused = [{**ask, "mcp_servers": [{"type": "url", "url": "https://mcp.example.invalid/sse", "name": "big"}]},
               {**ask, "container": "container_1"},
               *({**ask, "tools": [{"type": kind, "name": kind.split("_20")[0]}]}
                 for kind in ("web_fetch_20250910", "web_search_20250305", "code_execution_20250825", "mcp_toolset"))]
    passed = [{**ask, "tools": [{"name": "read", "input_schema": {"type": "object"}}, {"type": "custom", "name": "x", "input_schema": {}},
                                {"type": "bash_20250124", "name": "bash"}, {"type": "text_editor_20250728", "name": "str_replace_based_edit_tool"}]}]

    async def crowd(url: str) -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=url, timeout=30, limits=httpx.Limits(max_connections=20)) as http:
            return await asyncio.gather(*(http.post("/v1/messages", json=body, headers={"x-api-key": token})
                                          for body in refused * 17 + passed))

    with relayed(store, upstream.url, budget=500_000) as url:
        answers = asyncio.run(crowd(url))
    *no, yes = answers
    assert [answer.status_code for answer in no] == [400] * len(no) and yes.status_code == 200
    error = no[0].json()
    assert error["type"] == "error" and error["error"]["type"] == "invalid_request_error" and no[0].headers["x-should-retry"] == "false"
    assert "`mcp_servers`" in error["error"]["message"] and "web_fetch_20250910" in no[2].json()["error"]["message"]
    assert len(upstream.seen) == 1 and "mcp_servers" not in upstream.seen[0]["body"], "a refused request never leaves"
    reserved, used = held_and_used(store)
    assert reserved == 0 and used < 1_000


def test_a_stream_cut_before_its_usage_is_charged_its_reservation(store, upstream):
    _, token = store.join("Ada")
    with relayed(store, upstream.url) as url:
        with httpx.stream("POST", f"{url}/v1/messages", headers={"x-api-key": token}, timeout=10,
                          json={"model": "cut", "max_tokens": 300, "stream": True, "messages": [{"role": "user", "content": "hi"}]}) as answer:
            text = answer.read().decode()
    assert '"text": "hello"' in text and "event: error" in text and "ended the stream early" in text  # the client is told
    reserved, used = held_and_used(store)
    assert reserved == 0 and used >= 300 + 200  # max_tokens and the input seen: never 0, never less than was seen


def test_input_tokens_reported_only_in_message_delta_count(store, upstream):
    """A LiteLLM proxy reports input tokens in message_delta (0 in message_start): they count all the same."""
    _, token = store.join("Ada")
    with relayed(store, upstream.url) as url:
        with sdk(url, token).messages.stream(model="litellm", max_tokens=64, messages=[{"role": "user", "content": "hi"}]) as stream:
            stream.until_done()
    ada = store.students()[0]
    assert (ada.tokens_in, ada.tokens_out, ada.reserved) == (1200, 40, 0)


def test_a_client_leaving_mid_stream_is_settled_and_logs_no_traceback(store, upstream, capfd):
    _, token = store.join("Ada")
    with relayed(store, upstream.url) as url:
        with httpx.stream("POST", f"{url}/v1/messages", headers={"x-api-key": token}, timeout=10,
                          json={"model": "slow", "max_tokens": 500, "stream": True, "messages": [{"role": "user", "content": "hi"}]}) as answer:
            next(answer.iter_bytes())  # the first event, then the student presses Ctrl-C
        deadline = time.monotonic() + 10
        while held_and_used(store)[0] and time.monotonic() < deadline:
            time.sleep(0.05)
        # a body that never finishes arriving: the client gives up halfway
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=5) as half:
            half.sendall(f"POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: {token}\r\nContent-Length: 1000\r\n\r\n{{\"model\": ".encode())
            time.sleep(0.3)
        time.sleep(0.3)
    reserved, used = held_and_used(store)
    assert reserved == 0 and used >= 500 + 200  # charged as cut: its reservation
    assert "Traceback" not in capfd.readouterr().err


def test_a_restart_gives_back_what_requests_in_flight_held(store, upstream):
    ada, _ = store.join("Ada")
    assert store.reserve(ada, 9_000, 10_000) and not store.reserve(ada, 2_000, 10_000)
    Relay(store, INSTRUCTOR_KEY, 10_000, upstream.url)  # the relay starting again: nothing can be in flight
    assert store.reserve(ada, 10_000, 10_000)
