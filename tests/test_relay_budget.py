"""Relay budgets as reservations: many requests at once, cut streams, usage wherever the stream reports it."""
from __future__ import annotations

import asyncio
import socket
import time

import httpx

from grader.classroom.relay import Relay
from tests.test_relay import INSTRUCTOR_KEY, relayed, sdk, upstream  # noqa: F401 (upstream: the fixture)

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
    Each reserves a document's worst case (100 pages), so the budget is passed by less than one max_tokens."""
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
    assert statuses.count(200) == 1 and statuses.count(429) == 39, statuses  # a second 300,000 worst case never fits
    reserved, used = held_and_used(store)
    assert reserved == 0 and used == 200_050 and used <= budget + max_tokens


def test_the_estimate_reserves_worst_cases_for_what_its_text_does_not_show():
    from grader.classroom.usage import DOCUMENT_TOKENS, IMAGE_TOKENS, estimate_input

    def asking(*blocks, tools=()):
        return estimate_input({"messages": [{"role": "user", "content": list(blocks)}], "tools": list(tools)})

    plain = asking({"type": "text", "text": "hi"})
    pdf = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}}
    by_file = {"type": "document", "source": {"type": "file", "file_id": "file_1"}}
    image = {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}
    text_document = {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "x" * 3000}}
    assert asking(pdf) >= DOCUMENT_TOKENS and asking(by_file) >= DOCUMENT_TOKENS and asking(pdf, by_file) >= 2 * DOCUMENT_TOKENS
    assert IMAGE_TOKENS <= asking(image) < DOCUMENT_TOKENS
    assert 1000 <= asking(text_document) < DOCUMENT_TOKENS  # a text document is counted by its text
    fetch = {"type": "web_fetch_20250910", "name": "web_fetch", "max_uses": 3, "max_content_tokens": 50_000}
    search = {"type": "web_search_20250305", "name": "web_search"}
    assert asking(tools=[fetch]) >= plain + 150_000 and asking(tools=[search]) >= plain + 100_000
    assert asking(tools=[{"name": "read_file", "input_schema": {"type": "object"}}]) < plain + 100  # a client tool: its text


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
