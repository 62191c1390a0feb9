"""stash, the target repo: its sizes and seeded bugs as lessons quote them, its suite, and its API."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from grader.course import kit

STASH = kit.root() / "stash"
FEED = (STASH / "tests/fixtures/feed.xml").read_text(encoding="utf-8")
DATE_FIX = (
    '    formats = [\n        "%a, %d %b %Y %H:%M:%S %z",\n        "%Y-%m-%dT%H:%M:%S%z",\n'
    '        "%a, %d %b %Y %H:%M:%S",\n        "%Y-%m-%dT%H:%M:%S",\n    ]'
)
DATE_LINE = '    formats = ["%a, %d %b %Y %H:%M:%S", "%Y-%m-%dT%H:%M:%S"]'


def suite(root: Path) -> str:
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"], cwd=root,
                          capture_output=True, text=True, timeout=120)
    return re.findall(r"^=*\s*(\d+ (?:passed|failed).*?) in [\d.]+s", done.stdout, flags=re.MULTILINE)[-1]


@pytest.fixture
def stash_copy(tmp_path):
    return Path(shutil.copytree(STASH, tmp_path / "stash", ignore=shutil.ignore_patterns("__pycache__")))


def test_sizes_the_lessons_quote():
    lines = {name: (STASH / name).read_text().count("\n") for name in ("stash/extract.py", "stash/feeds.py", "tests/test_feeds.py")}
    assert lines == {"stash/extract.py": 22, "stash/feeds.py": 30, "tests/test_feeds.py": 27}
    assert (STASH / "stash/extract.py").read_text().count(DATE_LINE + "\n") == 1


def test_the_suite_is_two_failing_tests(stash_copy):
    assert suite(stash_copy) == "2 failed"


def test_the_lesson_3_fix_passes_one(stash_copy):
    extract = stash_copy / "stash/extract.py"
    extract.write_text(extract.read_text().replace(DATE_LINE, DATE_FIX))
    assert suite(stash_copy) == "1 failed, 1 passed"


def test_both_fixes_pass_the_suite(stash_copy):
    extract, feeds = stash_copy / "stash/extract.py", stash_copy / "stash/feeds.py"
    extract.write_text(extract.read_text().replace(DATE_LINE, DATE_FIX))
    feeds.write_text(feeds.read_text().replace("extract.strip_html(", "extract.plain_text("))
    assert suite(stash_copy) == "2 passed"


@pytest.fixture
def api(monkeypatch):
    monkeypatch.syspath_prepend(str(STASH))
    from stash import app as stash_app, extract

    def serve(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/missing.xml":
            return httpx.Response(404)
        return httpx.Response(200, text=FEED)

    stash_app.feeds.clear()
    stash_app.app.dependency_overrides[stash_app.http_client] = lambda: httpx.Client(transport=httpx.MockTransport(serve))
    monkeypatch.setattr(extract, "strip_html", extract.plain_text, raising=False)  # lesson 5's fix
    yield TestClient(stash_app.app)
    stash_app.app.dependency_overrides.clear()


def test_add_a_feed_and_read_its_entries(api):
    added = api.post("/feeds", json={"url": "https://example.test/feed.xml"})
    assert added.status_code == 201 and added.json() == {"id": 1, "url": "https://example.test/feed.xml", "entries": 2}
    assert api.get("/feeds").json() == [{"id": 1, "url": "https://example.test/feed.xml", "entries": 2}]
    entries = api.get("/feeds/1/entries").json()
    assert [entry["title"] for entry in entries] == ["Release notes for 2.0", "Why we moved to SQLite"]
    assert entries[1]["link"] == "https://example.test/posts/sqlite"


def test_unknown_feeds_are_404_and_bad_feeds_502(api):
    assert api.get("/feeds/9/entries").status_code == 404
    assert api.delete("/feeds/9").status_code == 404
    failed = api.post("/feeds", json={"url": "https://example.test/missing.xml"})
    assert failed.status_code == 502 and "missing.xml" in failed.json()["detail"]


def test_remove_a_feed(api):
    api.post("/feeds", json={"url": "https://example.test/feed.xml"})
    assert api.delete("/feeds/1").status_code == 204
    assert api.get("/feeds").json() == []
