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
from grader.course import kit

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH: `apt-get install -y chromium` (Debian) to run the browser test")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage", "--hide-scrollbars"]
PROJECTOR, WIDE = (1366, 768), (1920, 1080)


class CountingBoardReads:
    """Wraps the app to count the page's polls of /api/board: the live part of the page."""

    def __init__(self, app):
        self.app, self.reads = app, 0

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["path"] == "/api/board":
            self.reads += 1
        await self.app(scope, receive, send)


def chromium(tmp_path: Path, *args: str, size: tuple[int, int] = (1600, 1000)) -> str:
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    (profile / "home").mkdir(parents=True)
    home = {name: str(profile / "home") for name in ("HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")}  # nothing written outside
    browser = subprocess.Popen([CHROMIUM, *FLAGS, f"--window-size={size[0]},{size[1]}", f"--user-data-dir={profile / 'data'}", *args], stdout=subprocess.PIPE,
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
    rows = re.findall(r'<tr class="(\w+)"><td class="name"><span title="[^"]*">(.*?)</span></td><td>(.*?)</td><td>(.*?)</td>', dom)
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
    assert "token is not this board's" in denied and "Mallory" not in denied


class Measured:
    """Wraps the app so the page also loads /measure.js, which writes the layout's figures into the DOM once the
    board has rendered: how wide the page is, where the tenth student's row ends, how tall each lesson label is."""

    SCRIPT = b"""
"use strict";
function measure() {
  const rows = document.querySelectorAll("table.students tbody tr");
  if (rows.length < 10) { setTimeout(measure, 100); return; }
  const labels = [...document.querySelectorAll(".lessons th")];
  const out = document.createElement("pre");
  out.id = "measure";
  out.textContent = JSON.stringify({
    width: innerWidth, height: innerHeight, scrollWidth: document.documentElement.scrollWidth,
    tenthRowBottom: rows[9].getBoundingClientRect().bottom,
    labelHeights: labels.map(label => label.getBoundingClientRect().height / parseFloat(getComputedStyle(label).fontSize)),
    nameWidths: [...document.querySelectorAll("td.name")].map(cell => cell.getBoundingClientRect().right),
    namesCut: [...document.querySelectorAll("td.name")].filter(cell => cell.scrollWidth > cell.clientWidth).map(cell => cell.textContent),
    failingIdsCut: [...document.querySelectorAll("td.checks code")].filter(code => code.scrollWidth > code.clientWidth + 1).length,
    titlesShown: [...document.querySelectorAll("td.checks .why > span")].map(span => span.clientWidth / parseFloat(getComputedStyle(span).fontSize)),
    rootFont: parseFloat(getComputedStyle(document.documentElement).fontSize),
    tableRight: document.querySelector("table.students").getBoundingClientRect().right,
    asideLeft: document.querySelector("aside").getBoundingClientRect().left,
  });
  out.hidden = true;
  document.body.appendChild(out);
}
measure();
"""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["path"] == "/measure.js":
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/javascript")]})
            await send({"type": "http.response.body", "body": self.SCRIPT})
            return
        if scope["type"] != "http" or scope["path"] != "/":
            await self.app(scope, receive, send)
            return
        sent = []

        async def keep(message):
            sent.append(message)

        await self.app(scope, receive, keep)
        start, body = sent[0], b"".join(message.get("body", b"") for message in sent[1:])
        body = body.replace(b"</head>", b'<script src="/measure.js" defer></script></head>')
        start["headers"] = [(name, str(len(body)).encode() if name == b"content-length" else value) for name, value in start["headers"]]
        await send(start)
        await send({"type": "http.response.body", "body": body})


ROOM = ["Grace Hopper-Brewster", "Katherine Johnson-Goble", "Maximiliana Wolfeschlegelsteinhausen-Bergdorff"[:40]]


def a_full_room(store: Store) -> None:
    """Twelve students, names of up to 40 characters, nine lessons under way, the relay's token column on."""
    for number in range(12):
        student, _ = store.join(ROOM[number] if number < len(ROOM) else f"Maximiliana Wolfeschlegelsteinhausen {number:02}"[:40])
        lesson = number % 9
        ids = [check.id for check in kit.lesson(lesson).checks][:6]
        checks = [{"id": check, "lesson": lesson, "status": "failed" if index < 3 else "passed"} for index, check in enumerate(ids)]
        store.record(student, Report.model_validate({"id": os.urandom(16).hex(), "lesson": lesson, "passed": False, "score": 3,
                                                     "max_score": 6, "checks": checks}), now=time.time() - 60 * number)
        store.settle(student, 0, 123_456, 54_321)


@pytest.mark.parametrize("size", [PROJECTOR, WIDE], ids=["1366x768", "1920x1080"])
def test_the_board_fits_a_projector(tmp_path, size):
    import json

    from grader.classroom.relay import Relay

    store = Store(tmp_path / "class.sqlite")
    a_full_room(store)
    app = Measured(create_app(store, Relay(store, "sk-unused", 500_000, "http://127.0.0.1:9")))
    with in_thread(app) as url:
        page = f"{url}/?token={store.instructor_token}"
        dom = chromium(tmp_path, "--virtual-time-budget=5000", "--dump-dom", page, size=size)
        shot = Path(os.environ.get("BOARD_SCREENSHOT_DIR", tmp_path)) / f"board-{size[0]}x{size[1]}.png"
        chromium(tmp_path, "--virtual-time-budget=3000", f"--screenshot={shot}", page, size=size)
    store.close()
    print(f"\nboard screenshot: {shot}")
    found = re.search(r'<pre id="measure"[^>]*>(.*?)</pre>', dom)
    assert found, "the page did not render ten students' rows"
    figures = json.loads(found.group(1).replace("&quot;", '"'))
    # Headless chromium keeps room for a browser's own bars, as a real one on the projector does: the page gets less height.
    assert figures["width"] == size[0] and size[1] - 200 < figures["height"] <= size[1]
    assert figures["scrollWidth"] <= size[0], f"the page is {figures['scrollWidth']} px wide on a {size[0]} px screen"
    assert figures["tenthRowBottom"] <= figures["height"], f"the tenth row ends at {figures['tenthRowBottom']:.0f} px, below the fold"
    assert figures["labelHeights"] and max(figures["labelHeights"]) < 2, "a lesson label wraps onto a second line"
    assert max(figures["nameWidths"]) < size[0]
    assert figures["tableRight"] <= figures["asideLeft"], "the students' table runs under the summary beside it"
    assert figures["failingIdsCut"] == 0, "a failing check's id is cut"
    if size == WIDE:  # the screen it has: bigger type, names whole up to 25 characters, titles in the room left
        assert figures["rootFont"] >= 24
        assert not set(figures["namesCut"]) & set(ROOM[:2]), f"names cut on a 1920 px screen: {figures['namesCut']}"
        assert max(figures["titlesShown"]) >= 3, "no failing check's title is shown beside it"
    assert shot.is_file() and shot.stat().st_size > 10_000
