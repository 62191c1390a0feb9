"""Hostile submissions: each file in fixtures/hostile/ is appended to a solved tool and graded by `workshop check`.

Each must fail its own checks with a clear message, raise no score, keep the JSON whole, and
leave nothing behind: no process (counted from outside, by a tag in the environment and by
the pids the hostile code logs), no temp file (the run's TMPDIR is empty afterwards), nothing
new in the workspace.
"""
from __future__ import annotations

import fnmatch
import shutil
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from grader.course import kit
from grader.boundary.runfolder import PREFIX
from grader.grading.lab import MESSAGE_LIMIT
from tests.conftest import FIXTURES

HOSTILE = sorted(path for path in (FIXTURES / "hostile").glob("*.py") if "the solved rover/tools/read.py" in path.read_text().splitlines()[0])


def header(path: Path, key: str) -> str:
    """A `# key: value` line from the fixture's opening comments."""
    for line in path.read_text().splitlines():
        if line.startswith(f"# {key}: "):
            return line.split(": ", 1)[1]
    return ""


def tagged(tag: str) -> list[int]:
    """Every live process whose environment or command line carries the test's tag."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                seen = Path(f"/proc/{entry}/environ").read_bytes() + Path(f"/proc/{entry}/cmdline").read_bytes()
                if tag.encode() in seen and _state(int(entry)) not in "ZX":
                    found.append(int(entry))
            except OSError:
                pass
    return found


def boundary() -> str:
    from grader.boundary.side import NoBoundary, require

    try:
        return require()
    except NoBoundary:
        return ""


CANARY_KEY, CANARY_FILE = "sk-ant-canary-" + uuid.uuid4().hex, "canary-in-home-" + uuid.uuid4().hex
KIT = [Path(kit.__file__).parent.parent / "grading" / name for name in ("checks/lesson_1.py", "reports.py", "lab.py")]


def alive(pid: int) -> bool:
    return _state(pid) not in ("", "Z", "X")


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return ""


def grade_hostile(workspace, tmp_path: Path, fixture: Path, lesson: int = 1, timeout: float = 300, solved: bool = True, append=True,
                  extra_env: dict | None = None, user=None):
    """Grade a workspace with the fixture in it, with canary secrets about; what is left after it, outside the run folder.

    user: an OrdinaryUser (tests/test_identity.py) to grade as, in its folder, instead of as this process's user."""
    import socket

    if "boundary" in header(fixture, "needs") and not boundary():
        pytest.skip("needs a real boundary (bubblewrap); .ci/run installs it")
    root = workspace(lesson, solved=solved)
    if user:
        tmp_path, root = user.folder, user.workspace(root)
    target = root / ("rover/tools/read.py" if append else "rover/__init__.py")
    target.write_text(target.read_text() + "\n\n" + fixture.read_text())
    before = sorted(str(path.relative_to(root)) for path in root.rglob("*"))
    tag = uuid.uuid4().hex
    temp, log, results = tmp_path / "tmpdir", tmp_path / "pids.log", tmp_path / f"results-{tag}.json"
    home, classmate = tmp_path / "home", root.parent / "classmate" / "solution.py"
    for folder in (temp, home, classmate.parent):
        folder.mkdir(exist_ok=True)
    (home / ".canary").write_text(CANARY_FILE)
    classmate.write_text("# a classmate's work\n")
    kit_before = [path.read_bytes() for path in KIT]
    log.touch()
    if user:
        user.own(temp, home, log)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    env = {**os.environ, "TMPDIR": str(temp), "HOME": str(home), "ANTHROPIC_API_KEY": CANARY_KEY,
           "WORKSHOP_TEST_LOG": str(log), "WORKSHOP_TEST_RESULTS": str(results), "WORKSHOP_TEST_TAG": tag,
           "WORKSHOP_TEST_CANARY": str(home / ".canary"), "WORKSHOP_TEST_PORT": str(listener.getsockname()[1]),
           "WORKSHOP_BACKSTOP": "1000", **dict(pair.split("=", 1) for pair in header(fixture, "env").split()),
           **(extra_env or {})}  # only CPU budgets may end a check here, however busy the machine
    started = time.monotonic()
    command = [*(user.command if user else [sys.executable]), "-m", "grader.cli", "check", "--json", "--lesson", str(lesson),
               "--gradescope", str(results)]
    grade = lambda: subprocess.run(command, cwd=root, env=env, capture_output=True, timeout=timeout)
    try:
        done = planted_keyring(grade) if header(fixture, "plant") == "keyring" else grade()
        took = time.monotonic() - started
        time.sleep(0.3)  # a straggler would have shown itself by now
        try:
            listener.accept()[0].close()
            reached = True
        except OSError:
            reached = False
    finally:
        listener.close()
    pids = [int(line) for line in log.read_text().split()]
    said = done.stdout + done.stderr + (results.read_bytes() if results.exists() else b"")
    left = {"tagged": tagged(tag), "logged": [pid for pid in pids if alive(pid)], "temp": os.listdir(temp),
            "workspace": sorted(set(str(path.relative_to(root)) for path in root.rglob("*")) - set(before)),
            "secrets": [secret for secret in (CANARY_KEY, CANARY_FILE) if secret.encode() in said], "reached": reached,
            "changed": [str(path) for path, old in zip(KIT, kit_before) if path.read_bytes() != old]
                       + ([str(classmate)] if classmate.read_text() != "# a classmate's work\n" else [])}
    for pid in left["tagged"] + left["logged"]:  # never leave them to the next test
        os.kill(pid, 9)
    for path, old in zip(KIT, kit_before):  # never leave a rewritten kit to the next test
        if path.read_bytes() != old:
            path.write_bytes(old)
    return done, took, left, results

def planted_keyring(grade):
    """grade() run with a key in its session keyring, "workshop-canary" holding the canary API key: a session keyring
    of its own (joined in the starter thread, as the grader joins one for its side), the instructor's stand-in."""
    import ctypes

    from grader.boundary.backends.identity import in_fresh_keyring

    def planted():
        libc = ctypes.CDLL(None, use_errno=True)
        add_key = {"x86_64": 248, "aarch64": 217}.get(os.uname().machine, -1)
        payload = CANARY_KEY.encode()
        if libc.syscall(add_key, b"user", b"workshop-canary", payload, len(payload), ctypes.c_long(-3)) < 0:
            pytest.skip(f"no keyring to plant a key in here: {os.strerror(ctypes.get_errno())}")
        return grade()

    return in_fresh_keyring(planted)


NOTHING_LEFT = {"tagged": [], "logged": [], "temp": [], "workspace": [], "secrets": [], "reached": False, "changed": []}


# The attacks that cost a run a clock, a memory-hungry tree or a deep walk each (over 4 s of wall time apiece): proofs,
# sampled by `python -m pytest` and all run by `--proofs=all`. The cheap ones keep one of each kind in every run (a fork,
# a flood, an import that never ends: test_a_broken_import_is_one_root_cause_and_ends_in_seconds).
HEAVY = {"fork_memory", "shared_memory", "output_flood", "recursion_at_import", "deep_folders", "process_flood",
         "loop_at_import", "rewrite_kit", "file_flood", "pipe_flood", "shadow_backup"}


def heavy(names):
    return [pytest.param(name, marks=pytest.mark.slow, id=getattr(name, "stem", name)) if getattr(name, "stem", name) in HEAVY
            else pytest.param(name, id=getattr(name, "stem", name)) for name in names]


@pytest.mark.parametrize("fixture", heavy(HOSTILE))
def test_a_hostile_submission_gains_nothing_and_leaves_nothing(workspace, tmp_path, fixture):
    done, took, left, results = grade_hostile(workspace, tmp_path, fixture)
    assert done.returncode == 1, done.stderr.decode()[-2000:]
    report = json.loads(done.stdout)  # whole: it parses
    expected = [check.id for number in range(2) for check in kit.lesson(number).checks]
    assert [entry["id"] for entry in report["checks"]] == expected
    patterns = header(fixture, "fails").split()
    named = [entry for entry in report["checks"] if any(fnmatch.fnmatch(entry["id"], pattern) for pattern in patterns)]
    assert named, f"{fixture.name} names no check it must fail"
    assert not [entry["id"] for entry in named if entry["status"] == "passed"], "a hostile file passed a check it attacks"
    assert report["score"] <= report["max_score"] - sum(entry["points"] for entry in named)
    for entry in named:
        assert entry["message"].strip() and len(entry["message"]) <= MESSAGE_LIMIT, entry
    says = header(fixture, "says")
    if says:
        assert any(says in entry["message"] for entry in named), [entry["message"] for entry in named][:3]
    assert left == NOTHING_LEFT
    scores = json.loads(results.read_text())
    own = sum(entry["points"] for entry in report["checks"] if entry["lesson"] == report["lesson"] and entry["status"] == "passed")
    assert scores["score"] == own, "the results file must be the grader's, not a daemon's"


@pytest.mark.parametrize("name", ["loop_at_import", pytest.param("recursion_at_import", marks=pytest.mark.slow)])
def test_a_broken_import_is_one_root_cause_and_ends_in_seconds(workspace, tmp_path, name):
    done, took, left, _ = grade_hostile(workspace, tmp_path, FIXTURES / "hostile" / f"{name}.py")
    report = json.loads(done.stdout)
    assert took < 120, f"an import that never ends should cost one clock (5 s of CPU), not one per check; took {took:.1f} s"
    assert {entry["status"] for entry in report["checks"]} == {"error"}
    assert all("rover/tools/read.py line" in entry["message"] and "does not import" in entry["message"] for entry in report["checks"])


def test_a_killed_grader_leaves_no_score_and_no_process(workspace, tmp_path):
    """SIGKILL mid-run: no results file, and the keepers sweep their own trees and the run folder."""
    root = workspace(2, solved=True)
    temp, results, tag = tmp_path / "tmpdir", tmp_path / "results.json", uuid.uuid4().hex
    temp.mkdir()
    grader = subprocess.Popen([sys.executable, "-m", "grader.cli", "check", "--json", "--gradescope", str(results)], cwd=root,
                              env={**os.environ, "TMPDIR": str(temp), "WORKSHOP_TEST_TAG": tag}, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    grader.kill()
    out, _ = grader.communicate()
    deadline = time.monotonic() + 10  # the keepers' sweep needs a CPU: on a loaded machine 3 s was not always enough
    while (tagged(tag) or os.listdir(temp)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert out == b"" and not results.exists()
    assert tagged(tag) == [] and os.listdir(temp) == []


@pytest.mark.parametrize(("signals", "status"), [(["SIGINT"], 130), (["SIGINT", "SIGINT"], 130), (["SIGTERM"], 143)],
                         ids=["ctrl-c", "ctrl-c twice", "sigterm"])
def test_an_interrupted_check_stops_at_once_and_leaves_nothing(workspace, tmp_path, signals, status):
    import signal

    root = workspace(2, solved=True)
    temp, results, tag = tmp_path / "tmpdir", tmp_path / "results.json", uuid.uuid4().hex
    temp.mkdir()
    grader = subprocess.Popen([sys.executable, "-m", "grader.cli", "check", "--gradescope", str(results)], cwd=root,
                              env={**os.environ, "TMPDIR": str(temp), "WORKSHOP_TEST_TAG": tag}, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60  # mid-run: under load the imports alone can take over a second
    while not any(name.startswith(PREFIX) for name in os.listdir(temp)) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # the checks are under way
    started = time.monotonic()
    for name in signals:
        grader.send_signal(getattr(signal, name))
        time.sleep(0.02)
    out, err = grader.communicate(timeout=10)
    assert time.monotonic() - started < 1.0, "stops within a second"
    assert grader.returncode == status and b"Traceback" not in err, err.decode()[-1000:]
    assert not results.exists(), "an interrupted run claims no score"
    assert tagged(tag) == [] and os.listdir(temp) == []


def test_lesson_pins_the_lesson_graded_whatever_the_answers_file_says(workspace, tmp_path):
    from click.testing import CliRunner

    from grader.cli import main

    root = workspace(1, solved=True)
    (root / ".copier-answers.yml").write_text("lesson: 7\nsolved: true\n")  # edited by hand, to claim a later lesson
    cwd = os.getcwd()
    os.chdir(root)
    try:
        pinned = CliRunner().invoke(main, ["check", "--json", "--lesson", "1"])
        bad = CliRunner().invoke(main, ["check", "--json", "--lesson", "99"])
    finally:
        os.chdir(cwd)
    report = json.loads(pinned.output)
    assert pinned.exit_code == 0 and report["lesson"] == 1 and report["score"] == report["max_score"]
    assert [entry["id"] for entry in report["checks"]] == [check.id for number in range(2) for check in kit.lesson(number).checks]
    assert bad.exit_code == 2 and len(bad.output.strip().splitlines()) == 1 and "0 to" in bad.output and "Traceback" not in bad.output


class _LyingWorker:
    """A worker subverted past the harness: its answers are well-formed JSON of the wrong types."""

    def __init__(self, answer: dict):
        self.answer = answer

    def request(self, op, deadline, stopping, **fields):
        return self.answer


@pytest.mark.parametrize("data", [{"text": 1, "is_error": False}, {"text": "ok", "is_error": "no"}, {"text": "ok"}, ["ok", False], "ok"])
def test_the_grader_type_checks_every_answer_itself(tmp_path, data):
    from grader.grading.lab import CheckFailed, Lab

    lab = Lab(tmp_path, tmp_path, worker=_LyingWorker({"ok": data}))
    with pytest.raises(CheckFailed, match="a str"):
        lab.tool("read", path="x")


@pytest.mark.slow  # each 6-18 CPU s: the same fixtures, extras on, are in every run (test_a_hostile_submission_gains_nothing...)
@pytest.mark.parametrize("name", ["fork_memory", "fork_read", "daemon"])
def test_without_the_linux_extras_the_verdicts_hold(workspace, tmp_path, name):
    """No subreaper, no PR_SET_PDEATHSIG, no RLIMIT_AS (macOS, a dev container): the tree is still counted and swept."""
    fixture = FIXTURES / "hostile" / f"{name}.py"
    done, took, left, results = grade_hostile(workspace, tmp_path, fixture, extra_env={"WORKSHOP_LINUX_EXTRAS": "0"})
    report = json.loads(done.stdout)
    named = [entry for entry in report["checks"] if any(fnmatch.fnmatch(entry["id"], pattern) for pattern in header(fixture, "fails").split())]
    assert named and all(entry["status"] != "passed" for entry in named)
    says = header(fixture, "says")
    assert not says or any(says in entry["message"] for entry in named), [entry["message"] for entry in named][:3]
    assert left == NOTHING_LEFT


@pytest.mark.slow  # a whole lesson-8 stub: 127 checks
def test_the_scripted_model_cannot_be_patched_from_the_worker(workspace, tmp_path):
    """Issue 17: on an untouched lesson-8 stub, code that patched the grader's scripted model inside the worker made
    context.loop-trims and context.stash-scenario pass. The model now runs in the grader; the worker only asks it."""
    fixture = FIXTURES / "hostile" / "patch_model.py"
    done, took, left, results = grade_hostile(workspace, tmp_path, fixture, lesson=8, solved=False, append=False)
    report = json.loads(done.stdout)
    status = {entry["id"]: entry["status"] for entry in report["checks"]}
    assert status["context.loop-trims"] != "passed" and status["context.stash-scenario"] != "passed"
    assert status["loop.end-turn"] == "passed", "the patch must not break the rest: the lesson-0 loop still runs"
    assert left == NOTHING_LEFT


def test_without_bwrap_check_grades_in_the_process_sandbox_and_says_so(workspace, tmp_path):
    root = workspace(1, solved=True)
    bin_without = tmp_path / "bin"
    bin_without.mkdir()
    for name in ("git", "sh", "bash", "rg"):
        found = shutil.which(name)
        if found:
            (bin_without / name).symlink_to(found)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{bin_without}"}
    env.pop("WORKSHOP_SANDBOX", None)
    shown = subprocess.run([sys.executable, "-m", "grader.cli", "check"], cwd=root, env=env, capture_output=True, timeout=300)
    as_json = subprocess.run([sys.executable, "-m", "grader.cli", "check", "--json"], cwd=root, env=env, capture_output=True, timeout=300)
    report = json.loads(as_json.stdout)
    assert report["sandbox"] == "process" and report["score"] == report["max_score"], report["sandbox"]
    notes = [line for line in shown.stderr.decode().splitlines() if "no sandbox" in line]
    assert len(notes) == 1 and "bubblewrap is not installed: sudo apt-get install bubblewrap" in notes[0], shown.stderr.decode()
    assert shown.returncode == 0 and as_json.returncode == 0


@pytest.mark.parametrize("forced", ["firejail", "seatbelt"])
def test_a_forced_sandbox_that_cannot_run_is_one_line_and_exit_2(workspace, forced):
    root = workspace(0, solved=True)
    done = subprocess.run([sys.executable, "-m", "grader.cli", "check", "--json"], cwd=root, capture_output=True, timeout=120,
                          env={**os.environ, "WORKSHOP_SANDBOX": forced})
    assert done.returncode == 2 and done.stdout == b"", done.stderr.decode()[-500:]
    assert len(done.stderr.decode().strip().splitlines()) == 1 and f"WORKSHOP_SANDBOX={forced}" in done.stderr.decode()


def test_require_names_what_is_missing_and_how_to_install_it(monkeypatch):
    from grader.boundary import side as boundary
    from grader.boundary.backends import bwrap

    monkeypatch.delenv("WORKSHOP_SANDBOX", raising=False)
    monkeypatch.setattr(bwrap, "why_not", lambda: bwrap.INSTALL)
    with pytest.raises(boundary.NoBoundary, match="bubblewrap is not installed: sudo apt-get install bubblewrap"):
        boundary.require()
    assert boundary.choose().name == "process"
    monkeypatch.setenv("WORKSHOP_SANDBOX", "process")
    with pytest.raises(boundary.NoBoundary, match="--unsafe-no-sandbox"):
        boundary.require()


def test_removal_cannot_fail_however_deep_or_locked(tmp_path):
    from grader.boundary.runfolder import remove_tree

    top = tmp_path / "run"
    top.mkdir()
    here = str(top)
    for _ in range(1500):  # os.makedirs would recurse: one level at a time
        here += "/d"
        os.mkdir(here)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    (top / "link").symlink_to(outside)
    locked = top / "locked"
    locked.mkdir()
    (locked / "ro.txt").write_text("x")
    (locked / "ro.txt").chmod(0o400)
    locked.chmod(0)
    top.chmod(0o500)
    remove_tree(top)
    assert not top.exists() and (outside / "keep.txt").read_text() == "keep", "never follows a symlink out"


def test_links_planted_in_the_run_folder_are_never_followed(workspace, tmp_path):
    """Attack, hole 1: the edit tool leaves a symlink to a secret where its result should be, and a thread plants links to a
    classmate's file in every check folder. The grader reads and writes there without following any link."""
    fixture = FIXTURES / "hostile" / "plant_links.py"
    done, took, left, results = grade_hostile(workspace, tmp_path, fixture, lesson=3)
    report = json.loads(done.stdout)
    status = {entry["id"]: entry for entry in report["checks"]}
    for name in header(fixture, "fails").split():
        assert status[name]["status"] == "failed" and "is a symlink" in status[name]["message"], status[name]
    assert status["read.numbered"]["status"] == "passed", "the links do not break what never looks at them"
    assert left == NOTHING_LEFT


def test_the_grader_never_writes_or_reads_through_a_planted_link(tmp_path):
    from grader.grading.lab import CheckFailed, Lab
    from grader.boundary.runfolder import RunFolder

    outside = tmp_path / "outside.txt"
    outside.write_text("a classmate's work\n")
    folder = RunFolder()
    try:
        pinned = folder.pinned("check")
        lab = Lab(tmp_path, pinned, worker=_LyingWorker({"ok": None}))
        (pinned.path / "notes.txt").symlink_to(outside)
        written = lab.file("notes.txt", "the grader's test file\n")
        assert outside.read_text() == "a classmate's work\n" and not written.is_symlink()
        (pinned.path / "sub").symlink_to(tmp_path)
        for action in (lambda: lab.file("sub/outside.txt", "x"), lambda: lab.files.read_text("sub/outside.txt")):
            with pytest.raises(CheckFailed, match="sub is a symlink"):
                action()
        (pinned.path / "secret").symlink_to("/proc/self/environ")
        with pytest.raises(CheckFailed, match="secret is a symlink: the tool must write a file, not a link"):
            lab.files.read_text("secret")
        os.mkfifo(pinned.path / "fifo")
        with pytest.raises(CheckFailed, match="not a regular file"):
            lab.files.read_bytes("fifo")  # refused at once, never blocking
        with pytest.raises(CheckFailed, match="a symlink"):
            lab.files.chmod("secret", 0o777)
        assert outside.read_text() == "a classmate's work\n"
        lab.close()
    finally:
        folder.close()
    assert not folder.path.exists() and outside.exists()


def test_a_silenced_spy_is_tampering_not_no_tool_ran(workspace, tmp_path):
    """Attack, hole 3: the spy tool switched off in the worker made a loop that runs cut-off calls pass loop.max-tokens.
    The spy's calls now reach the grader as they happen, and a spy that was never offered or never told is tampering."""
    fixture = FIXTURES / "hostile" / "silence_spy.py"
    done, took, left, results = grade_hostile(workspace, tmp_path, fixture, lesson=1, append=False)
    report = json.loads(done.stdout)
    status = {entry["id"]: entry for entry in report["checks"]}
    assert status["loop.max-tokens"]["status"] == "failed", status["loop.max-tokens"]
    assert "the spy tool was tampered with" in status["loop.max-tokens"]["message"]
    assert status["loop.end-turn"]["status"] == "passed" and status["read.numbered"]["status"] == "passed"
    assert left == NOTHING_LEFT


@pytest.mark.slow  # it sleeps through a backstop: 30 s
def test_a_tool_that_mostly_sleeps_is_a_timeout_not_a_busy_machine(workspace, tmp_path):
    """Attack, hole 7: at the wall-clock backstop, a tree that used little CPU and waited little in the run queue
    (/proc/PID/schedstat) was asleep: a timeout naming the student's line, not 'the machine was too busy'."""
    fixture = FIXTURES / "hostile" / "sleepy_burn.py"
    done, took, left, results = grade_hostile(workspace, tmp_path, fixture, extra_env={"WORKSHOP_BACKSTOP": "1.5"})
    report = json.loads(done.stdout)
    numbered = next(entry for entry in report["checks"] if entry["id"] == "read.numbered")
    assert numbered["status"] == "timeout" and "still waiting after" in numbered["message"], numbered
    assert "rover/tools/read.py line" in numbered["message"], numbered["message"]
    assert not any("too busy" in entry["message"] for entry in report["checks"])
    assert left == NOTHING_LEFT


def test_the_process_fallback_says_so_on_screen_and_in_every_report(workspace, tmp_path):
    """Hole 8: WORKSHOP_SANDBOX=process (forced) says so in one line, and so does every report it writes."""
    root = workspace(1, solved=True)
    junit, gradescope = tmp_path / "junit.xml", tmp_path / "results.json"
    done = subprocess.run([sys.executable, "-m", "grader.cli", "check", "--json", "--junit", str(junit), "--gradescope", str(gradescope)],
                          cwd=root, env={**os.environ, "WORKSHOP_SANDBOX": "process"}, capture_output=True, timeout=300)
    report = json.loads(done.stdout)
    assert report["sandbox"] == "process" and done.returncode == 0
    notes = [line for line in done.stderr.decode().splitlines() if "no sandbox" in line]
    assert len(notes) == 1 and "WORKSHOP_SANDBOX=process" in notes[0], done.stderr.decode()
    assert "Graded without a sandbox" in json.loads(gradescope.read_text())["output"]
    text = junit.read_text()
    assert 'name="sandbox" value="process"' in text and "Graded without a sandbox" in text


PRELUDE = """
import ctypes, json, os, subprocess, sys, threading
libc, out = ctypes.CDLL(None, use_errno=True), {}
def attempt(name, call):
    try:
        call()
        out[name] = "ok"
    except OSError as error:
        out[name] = error.strerror
"""
HOLDS = PRELUDE + """
fd = os.open("held", os.O_CREAT | os.O_RDWR)
out["fallocate"] = "ok" if libc.fallocate(fd, 1, ctypes.c_long(0), ctypes.c_long(1 << 30)) == 0 else os.strerror(ctypes.get_errno())
out["shmget"] = "ok" if libc.shmget(0, 1 << 20, 0o1600) >= 0 else os.strerror(ctypes.get_errno())
attempt("memfd_create", lambda: os.memfd_create("held"))
attempt("nice", lambda: os.nice(5))
attempt("sched_idle", lambda: os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0)))
ring = ctypes.create_string_buffer(120)  # struct io_uring_params: a ring could fallocate where no filter looks
out["io_uring"] = "ok" if libc.syscall(425, 8, ring) >= 0 else os.strerror(ctypes.get_errno())
attempt("posix_fallocate", lambda: os.posix_fallocate(fd, 0, 1 << 20))  # glibc writes it instead: the size limit holds
attempt("dev", lambda: open("/dev/planted", "w"))
shm = os.open("/dev/shm/held", os.O_CREAT | os.O_RDWR)
attempt("dev_shm", lambda: os.posix_fallocate(shm, 0, 1 << 20))
open("/tmp/held", "w").close()
for number in range(100):  # hard links: in a tmpfs, memory its size limit did not count; here, entries the walk counts
    os.link("/tmp/held", f"/tmp/link-{number}")
attempt("dev_null", lambda: os.write(os.open("/dev/null", os.O_WRONLY), b"x"))
out["held_bytes"] = os.fstat(fd).st_blocks * 512
numbers = {"x86_64": (272, 56, 435), "aarch64": (97, 220, 435)}[os.uname().machine]  # unshare, clone, clone3
out["unshare"] = "ok" if libc.syscall(numbers[0], 0x10000000) == 0 else os.strerror(ctypes.get_errno())  # CLONE_NEWUSER
out["clone_newuser"] = "ok" if libc.syscall(numbers[1], 0x10000000 | 17, 0, 0, 0, 0) >= 0 else os.strerror(ctypes.get_errno())
out["clone3"] = "ok" if libc.syscall(numbers[2], 0, 0) >= 0 else os.strerror(ctypes.get_errno())
out["unshare_mount_tmpfs"] = subprocess.run(["unshare", "-Urm", "mount", "-t", "tmpfs", "none", "/tmp"], capture_output=True).returncode
child = os.fork()  # what the code may still do: fork, threads, commands (glibc falls back from clone3 to clone)
if child == 0:
    os._exit(7)
thread = threading.Thread(target=lambda: out.setdefault("thread", "ran"))
thread.start()
thread.join()
out["fork"] = os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])
out["command"] = subprocess.run(["echo", "ran"], capture_output=True, text=True).stdout.strip()
pipe = os.pipe()
attempt("sendfile", lambda: os.sendfile(pipe[1], fd, 0, 4096))  # a file's cached pages, queued by reference
attempt("splice", lambda: os.splice(fd, pipe[1], 4096, offset_src=0))
import shutil, socket
shutil.copyfile("held", "copied")  # falls back to read and write
ends = socket.socketpair()
ends[0].sendfile(open("held", "rb"), 0, 4096)  # falls back to send
out["copied"] = [os.path.getsize("copied"), len(ends[1].recv(8192))]
open(sys.argv[1], "w").write(json.dumps(out))
"""


def run_in_side(tmp_path: Path, script: str, look=lambda folder: None):
    """`script` run by python in a bwrap side of its own (its argv[1]: where to write the JSON it says); that JSON, and
    what `look(run_folder)` saw before the folder went."""
    if boundary() != "bwrap":
        pytest.skip("bubblewrap cannot start here")
    from grader.boundary.backends.bwrap import Bwrap
    from grader.boundary.runfolder import RunFolder

    folder, side, workspace = RunFolder(), Bwrap(), tmp_path / "workspace"
    workspace.mkdir()  # not tmp_path itself: pytest makes it 0700, which a root grader's side (65534) cannot enter
    try:
        said = folder.path / "said.json"
        side.start([sys.executable, "-I", "-c", script, str(said)], folder, workspace, (), folder.path).wait(60)
        return json.loads(said.read_text()), look(folder)
    finally:
        side.end()
        folder.close()


@pytest.mark.skipif(sys.platform != "linux", reason="bubblewrap is Linux's boundary")
def test_the_side_cannot_hold_disk_or_memory_past_the_counts_nor_lower_its_priority(tmp_path):
    """Attack wave 3: fallocate reserved 1.9 GiB in one call past the 128 MiB file limit; memfd, SysV shared memory
    and an unbounded /dev/shm held RAM nothing counted (then hard links in a sized tmpfs did); SCHED_IDLE made an
    endless loop look like a busy machine.
    Then `unshare -Urm` gave the code a mount namespace of its own, and in it a tmpfs of any size."""
    from grader.boundary import folder_caps

    out, seen = run_in_side(tmp_path, HOLDS, lambda folder: folder_caps.measure(folder.fd))  # what the run folder's walk counts
    shm, tmp = seen.by_bytes["shm"], seen.by_entries["tmp"]
    refused = {"io_uring": "Function not implemented", "fallocate": "Operation not supported", "shmget": "Function not implemented", "memfd_create": "Function not implemented",
               "nice": "Operation not permitted", "sched_idle": "Operation not permitted", "dev": "Read-only file system"}
    assert {name: out[name] for name in refused} == refused
    assert out["posix_fallocate"] == out["dev_null"] == out["dev_shm"] == "ok" and out["held_bytes"] == 1 << 20
    # /dev/shm and /tmp are the run folder's shm/ and tmp/: on disk, and its walk counts every byte and every link
    assert shm >= 1 << 20 and tmp >= 100
    # attack wave 6: a user namespace of its own let the code mount a tmpfs no size bounds and no process holds
    assert (out["unshare"], out["clone_newuser"], out["clone3"]) == ("Operation not permitted", "Operation not permitted", "Function not implemented")
    assert out["unshare_mount_tmpfs"] != 0
    assert (out["fork"], out["thread"], out["command"]) == (7, "ran", "ran")
    # attack wave 6: file pages sent by reference into sockets and pipes held 1.3 GB the kernel could not drop
    assert (out["sendfile"], out["splice"]) == ("Function not implemented", "Function not implemented")
    assert out["copied"] == [1 << 20, 4096]


def test_a_spawned_workers_own_import_is_measured_and_only_its_check_is_blamed(workspace, tmp_path):
    done, took, left, _ = grade_hostile(workspace, tmp_path, FIXTURES / "hostile" / "flood_in_worker.py",
                                        extra_env={"WORKSHOP_WORKER_START": "spawn"})
    report = json.loads(done.stdout)
    failed = [entry for entry in report["checks"] if entry["status"] in ("failed", "timeout")]
    assert len(failed) == 1, [(entry["id"], entry["message"][:160]) for entry in failed]
    assert "a fresh worker's import of rover" in failed[0]["message"] and "MB" in failed[0]["message"], failed[0]
    # on a loaded machine another fresh worker may be slow to start while the flood is written: an error, no blame
    others = [entry for entry in report["checks"] if entry["status"] == "error"]
    assert not any("MB" in entry["message"] for entry in others), [entry["message"][:160] for entry in others]
    assert left == NOTHING_LEFT

