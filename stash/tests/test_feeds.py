from pathlib import Path

import httpx

from stash.feeds import fetch_feed

FEED = Path(__file__).parent / "fixtures" / "feed.xml"


def serve_fixture(request: httpx.Request) -> httpx.Response:
    assert request.url.path == "/feed.xml"
    return httpx.Response(200, text=FEED.read_text(encoding="utf-8"))


def test_fetch_feed_parses_entries():
    client = httpx.Client(transport=httpx.MockTransport(serve_fixture))

    entries = fetch_feed("https://example.test/feed.xml", client)

    assert [entry.title for entry in entries] == [
        "Release notes for 2.0",
        "Why we moved to SQLite",
    ]
    assert [entry.link for entry in entries] == [
        "https://example.test/posts/release-2",
        "https://example.test/posts/sqlite",
    ]
