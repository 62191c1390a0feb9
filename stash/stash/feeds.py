"""Fetch a feed over HTTP and turn its RSS items into entries."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from datetime import datetime

import httpx

from stash import extract


@dataclass
class Entry:
    title: str
    link: str
    published: datetime | None


def parse_feed(xml: str) -> list[Entry]:
    return [_entry(item) for item in ET.fromstring(xml).iter("item")]


def _entry(item: ET.Element) -> Entry:
    title = extract.strip_html(item.findtext("title", ""))
    return Entry(title, item.findtext("link", "").strip(), extract.parse_date(item.findtext("pubDate", "")))


def fetch_feed(url: str, client: httpx.Client) -> list[Entry]:
    return parse_feed(client.get(url, follow_redirects=True).raise_for_status().text)
