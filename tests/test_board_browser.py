"""The board page in a real headless Chromium: what the instructor sees after students post.

Needs Debian's `chromium` (`.ci/run` installs it); skipped with the reason when it is not on PATH.
A screenshot is saved for review: in the test's tmp dir, or where $BOARD_SCREENSHOT says.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from grader.classroom.board import create_app
from grader.classroom.payloads import Report
from grader.classroom.serving import in_thread
from grader.classroom.store import Store

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH: `apt-get install -y chromium` (Debian) to run the browser test")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage", "--hide-scrollbars", "--window-size=1600,1000"]


class CountingBoardReads:
    """Wraps the app to count the page's polls of /api/board: the live part of the page."""

    def __init__(self, app):
        self.app, self.reads = app, 0

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["path"] == "/api/board":
            self.reads += 1
        await self.app(scope, receive, send)


def chromium(tmp_path: Path, *args: str) -> str:
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    (profile / "home").mkdir(parents=True)
    home = {name: str(profile / "home") for name in ("HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")}  # nothing written outside
    browser = subprocess.Popen([CHROMIUM, *FLAGS, f"--user-data-dir={profile / 'data'}", *args], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True, start_new_session=True, env={**os.environ, **home})
    try:
        out, _ = browser.communicate(timeout=90)
    finally:
        try:
            os.killpg(browser.pid, signal.SIGKILL)  # its helper processes too
        except ProcessLookupError:
            pass
    return out


def class_with_students(store: Store) -> None:
    def send(name: str, lesson: int, statuses: dict[str, str], minutes_ago: float = 0) -> None:
        student, _ = store.join(name)
        checks = [{"id": check, "lesson": int(lesson), "status": status} for check, status in statuses.items()]
        store.record(student, Report.model_validate({"id": os.urandom(16).hex(), "lesson": lesson, "passed": "failed" not in statuses.values(),
                                                     "score": 0, "max_score": len(checks), "checks": checks}), now=time.time() - 60 * minutes_ago)

    send("Ada Lovelace", 2, {"bash.timeout": "failed", "bash.output": "passed", "read.numbered": "passed"})
    send("Grace Hopper", 2, {"bash.timeout": "failed", "bash.background": "failed", "read.numbered": "passed"}, minutes_ago=12)
    send("Alan Turing", 1, {"read.missing": "passed", "read.numbered": "passed"})
    send("<i>Mallory</i>", 1, {"read.numbered": "timeout", "read.missing": "passed"})
    store.join("Latecomer")


def test_the_board_page_shows_the_class_live(tmp_path):
    store = Store(tmp_path / "class.sqlite")
    class_with_students(store)
    app = CountingBoardReads(create_app(store))
    with in_thread(app) as url:
        page = f"{url}/?token={store.instructor_token}"
        dom = chromium(tmp_path, "--virtual-time-budget=5000", "--dump-dom", page)
        shot = Path(os.environ.get("BOARD_SCREENSHOT", tmp_path / "board.png"))
        chromium(tmp_path, "--virtual-time-budget=3000", f"--screenshot={shot}", page)
        denied = chromium(tmp_path, "--dump-dom", f"{url}/?token=wrong")
    store.close()
    print(f"\nboard screenshot: {shot}")
    rows = re.findall(r'<tr class="(\w+)"><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td>', dom)
    assert rows == [
        ("stuck", "Grace Hopper", "2", "1/3"),  # stuck longest first
        ("working", "&lt;i&gt;Mallory&lt;/i&gt;", "1", "1/2"),  # stuck the same minute: then by name
        ("working", "Ada Lovelace", "2", "2/3"),
        ("done", "Alan Turing", "1", "2/2"),
        ("waiting", "Latecomer", "–", "–"),
    ]
    assert "<i>" not in dom  # the name is text on the page, not markup
    assert re.search(r'<li><span class="count">2</span> <code>bash\.timeout</code> \w+', dom)  # with the check's title
    assert "5 students joined, 4 reporting" in dom and "12 min" in dom
    assert re.search(r"<th>lesson 1</th><td><meter[^>]*></meter></td><td>3 done</td><td>1 working</td>", dom)
    assert re.search(r'<a id="csv" href="/board.csv\?token=[^"]+">Export CSV</a>', dom)
    assert app.reads >= 2, "the page should poll the board again, not load it once"
    assert shot.is_file() and shot.stat().st_size > 10_000
    assert "instructor's link" in denied and "Mallory" not in denied
