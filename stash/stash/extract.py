"""Turn the strings found inside feeds into Python values."""
from __future__ import annotations

import re
from datetime import datetime

TAG = re.compile(r"<[^>]+>")


def parse_date(value: str) -> datetime | None:
    """Read a feed's date; None when no format we know fits it."""
    formats = ["%a, %d %b %Y %H:%M:%S", "%Y-%m-%dT%H:%M:%S"]
    for fmt in formats:
        try:
            return datetime.strptime(value.strip(), fmt)
        except ValueError:
            continue
    return None


def plain_text(html: str) -> str:
    return TAG.sub("", html).strip()
