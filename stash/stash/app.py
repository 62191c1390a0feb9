"""The HTTP face of stash: subscribe to feeds, then read what they published.

Run it with `uvicorn stash.app:app`. Everything lives in memory; restart and it is gone.
"""
from __future__ import annotations

from collections.abc import Iterator

import httpx
from fastapi import Depends, FastAPI, HTTPException
from pydantic import BaseModel

from stash.feeds import Entry, fetch_feed

app = FastAPI(title="stash", summary="A small feed reader.")
feeds: dict[int, dict] = {}


class NewFeed(BaseModel):
    url: str


def http_client() -> Iterator[httpx.Client]:
    """One client per request; tests swap this dependency for a mock transport."""
    with httpx.Client(timeout=10) as client:
        yield client


def _as_json(entry: Entry) -> dict:
    published = entry.published.isoformat() if entry.published else None
    return {"title": entry.title, "link": entry.link, "published": published}


@app.post("/feeds", status_code=201)
def add_feed(new: NewFeed, client: httpx.Client = Depends(http_client)) -> dict:
    try:
        entries = fetch_feed(new.url, client)
    except (httpx.HTTPError, SyntaxError) as error:
        raise HTTPException(502, f"could not read the feed at {new.url}: {error}") from error
    feed_id = max(feeds, default=0) + 1
    feeds[feed_id] = {"id": feed_id, "url": new.url, "entries": [_as_json(e) for e in entries]}
    return {"id": feed_id, "url": new.url, "entries": len(entries)}


@app.get("/feeds")
def list_feeds() -> list[dict]:
    return [{"id": f["id"], "url": f["url"], "entries": len(f["entries"])} for f in feeds.values()]


@app.get("/feeds/{feed_id}/entries")
def feed_entries(feed_id: int) -> list[dict]:
    if feed_id not in feeds:
        raise HTTPException(404, f"no feed with id {feed_id}")
    return feeds[feed_id]["entries"]


@app.delete("/feeds/{feed_id}", status_code=204)
def remove_feed(feed_id: int) -> None:
    if feeds.pop(feed_id, None) is None:
        raise HTTPException(404, f"no feed with id {feed_id}")
