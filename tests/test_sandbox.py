"""Hostile submissions: each file in fixtures/hostile/ is appended to a solved tool and graded by `workshop check`.

Each must fail its own checks with a clear message, raise no score, keep the JSON whole, and
leave nothing behind: no process (counted from outside, by a tag in the environment and by
the pids the hostile code logs), no temp file (the run's TMPDIR is empty afterwards), nothing
new in the workspace.
"""
from __future__ import annotations

import fnmatch
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from grader.course import kit
from grader.grading.lab import MESSAGE_LIMIT
from tests.conftest import FIXTURES

HOSTILE = sorted((FIXTURES / "hostile").glob("*.py"))


def header(path: Path, key: str) -> str:
    """A `# key: value` line from the fixture's opening comments."""
    for line in path.read_text().splitlines():
        if line.startswith(f"# {key}: "):
            return line.split(": ", 1)[1]
    return ""


def tagged(tag: str) -> list[int]:
    """Every live process whose environment carries the test's tag."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if tag.encode() in Path(f"/proc/{entry}/environ").read_bytes() and _state(int(entry)) not in "ZX":
                    found.append(int(entry))
            except OSError:
                pass
    return found


def alive(pid: int) -> bool:
    return _state(pid) not in ("", "Z", "X")


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return ""


def grade_hostile(workspace, tmp_path: Path, fixture: Path, lesson: int = 1, timeout: float = 300):
    root = workspace(lesson, solved=True)
    target = root / "rover/tools/read.py"
    target.write_text(target.read_text() + "\n\n" + fixture.read_text())
    before = sorted(str(path.relative_to(root)) for path in root.rglob("*"))
    temp, log, results, tag = tmp_path / "tmpdir", tmp_path / "pids.log", tmp_path / "results.json", uuid.uuid4().hex
    temp.mkdir()
    log.touch()
    env = {**os.environ, "TMPDIR": str(temp), "WORKSHOP_TEST_LOG": str(log), "WORKSHOP_TEST_RESULTS": str(results), "WORKSHOP_TEST_TAG": tag,
           "WORKSHOP_BACKSTOP": "1000"}  # only CPU budgets may end a check here, however busy the shared machine is
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "grader.cli", "check", "--json", "--lesson", str(lesson), "--gradescope", str(results)],
                          cwd=root, env=env, capture_output=True, timeout=timeout)
    took = time.monotonic() - started
    time.sleep(0.3)  # a straggler would have shown itself by now
    pids = [int(line) for line in log.read_text().split()]
    left = {"tagged": tagged(tag), "logged": [pid for pid in pids if alive(pid)], "temp": os.listdir(temp),
            "workspace": sorted(set(str(path.relative_to(root)) for path in root.rglob("*")) - set(before))}
    for pid in left["tagged"] + left["logged"]:  # never leave them to the next test
        os.kill(pid, 9)
    return done, took, left, results


@pytest.mark.parametrize("fixture", HOSTILE, ids=[path.stem for path in HOSTILE])
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
    assert left == {"tagged": [], "logged": [], "temp": [], "workspace": []}
    scores = json.loads(results.read_text())
    own = sum(entry["points"] for entry in report["checks"] if entry["lesson"] == report["lesson"] and entry["status"] == "passed")
    assert scores["score"] == own, "the results file must be the grader's, not a daemon's"


@pytest.mark.parametrize("name", ["loop_at_import", "recursion_at_import"])
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
    deadline = time.monotonic() + 3
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
    time.sleep(1.2)  # mid-run: the slow checks are under way
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
