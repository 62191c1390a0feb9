from datetime import timedelta

from stash.extract import parse_date


def test_parse_date_preserves_offset():
    published = parse_date("Mon, 03 Feb 2026 09:00:00 +0530")
    assert published is not None, "an RFC 822 date with an offset should parse"
    assert published.utcoffset() == timedelta(hours=5, minutes=30)
