"""Workers forked from the zygote (Linux) or spawned as fresh interpreters (macOS, no fork, the Linux extras off):
the same verdicts, the same judgement of a hostile import, nothing left behind (grader.boundary.starting)."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid

import pytest

from grader.boundary import starting
from grader.errors import WorkshopError
from tests.conftest import FIXTURES
from tests.test_machines import NO_LINUX_EXTRAS, verdicts
from tests.test_sandbox import NOTHING_LEFT, grade_hostile, tagged

SIDES = ["bwrap", "process"] if shutil.which("bwrap") else ["process"]


def test_the_mode_is_fork_on_linux_and_spawn_where_macos_would_be(monkeypatch):
    monkeypatch.delenv("WORKSHOP_WORKER_START", raising=False)
    monkeypatch.delenv("WORKSHOP_LINUX_EXTRAS", raising=False)
    monkeypatch.setattr(sys, "platform", "linux")
    assert starting.mode() == "fork"
    monkeypatch.setenv("WORKSHOP_LINUX_EXTRAS", "0")  # what macOS and a dev container look like
    assert starting.mode() == "spawn"
    monkeypatch.delenv("WORKSHOP_LINUX_EXTRAS")
    monkeypatch.setattr(sys, "platform", "darwin")
    assert starting.mode() == "spawn"
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.delattr(os, "fork")
    assert starting.mode() == "spawn"
    with pytest.raises(WorkshopError, match="WORKSHOP_WORKER_START=fork: this system has no fork"):
        monkeypatch.setenv("WORKSHOP_WORKER_START", "fork")
        starting.mode()


@pytest.mark.parametrize("forced", ["spawn", "fork"])
def test_the_mode_can_be_forced_and_a_wrong_one_is_one_line(workspace, monkeypatch, forced):
    root = workspace(0, True)
    monkeypatch.setenv("WORKSHOP_WORKER_START", forced)
    monkeypatch.setenv("WORKSHOP_LINUX_EXTRAS", "0" if forced == "fork" else "1")  # the other default
    assert starting.mode() == forced
    done = subprocess.run([sys.executable, "-m", "grader.cli", "check", "--json"], cwd=root, capture_output=True,
                          timeout=120, env={**os.environ, "WORKSHOP_WORKER_START": f"v{forced}"})
    said = done.stderr.decode().strip().splitlines()
    assert done.returncode == 2 and done.stdout == b"" and said[-1].endswith("not a way to start workers; use fork or spawn")
    assert "Traceback" not in done.stderr.decode()


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("mode", ["fork", "spawn"])
def test_a_spawned_worker_is_a_fresh_interpreter_and_goes_with_its_keeper(rendered, monkeypatch, side, mode):
    """Spawned, the keeper and the worker run `main(["keeper"...])` and `main(["worker"...])`, never a copy of the
    zygote; forked, they are copies of it. Either way the worker answers, and stopping it leaves no process."""
    from grader.boundary.side import choose
    from grader.boundary.proxy import Worker, Zygote
    from grader.boundary.processes import process
    from grader.grading.runner import HARNESS
    from grader.boundary.runfolder import RunFolder

    monkeypatch.setenv("WORKSHOP_WORKER_START", mode)
    monkeypatch.setenv("WORKSHOP_SANDBOX", side)
    if side == "process":
        monkeypatch.setenv("WORKSHOP_LINUX_EXTRAS", "0")  # as on macOS (and no subreaper taken by this test process)
    run, stopping, boundary = RunFolder(), threading.Event(), choose()
    zygote = worker = None
    try:
        zygote = Zygote(run, rendered(1, True), boundary, HARNESS)
        assert "ok" in zygote.imported(30, stopping)
        worker = Worker(run, zygote, stopping)
        worker.start(30, stopping)
        # its folder is claimed only while a clock watches it (its import): an idle or stopped worker's folder that
        # grows is no one's and stops the run (an attack wrote 1.5 GB into a stopped worker's claimed folder)
        assert run.disk._claimed[worker.scratch.name] <= 0
        roles = [process(pid).cmdline()[5] for pid in (worker.keeper, worker.pid)]
        assert roles == (["keeper", "worker"] if mode == "spawn" else ["zygote", "zygote"])
        answer = worker.request("tool", worker.clock(30), stopping, name="read", args={"path": "README.md"}, cwd=str(rendered(1, True)))
        assert answer["ok"]["is_error"] is False and "stash" in answer["ok"]["text"].lower()
        pids = [proc.pid for proc in boundary.processes()]
        worker.stop()
        assert not [pid for pid in (worker.keeper, worker.pid) if process(pid) and process(pid).status() != "zombie"]
        assert run.disk._claimed[worker.scratch.name] <= 0
    finally:
        if worker:
            worker.stop()
        if zygote:
            zygote.stop()
        boundary.end()
        run.close()
    assert not [pid for pid in pids if process(pid) and process(pid).status() != "zombie"], "nothing of the side is left"


@pytest.mark.slow  # six gradings a lesson
@pytest.mark.parametrize("lesson", [2, 5, 8])
def test_verdicts_are_the_same_when_workers_are_spawned(workspace, lesson):
    """Spawned inside the real boundary (the extras-off run in test_machines spawns in the process sandbox)."""
    for solved in (True, False):
        folder = workspace(lesson, solved)
        (forked, forked_statuses), (spawned, spawned_statuses) = (verdicts(folder, WORKSHOP_WORKER_START=mode) for mode in ("fork", "spawn"))
        assert spawned["sandbox"] == forked["sandbox"]
        both = forked_statuses.keys() & spawned_statuses.keys()
        assert len(both) >= 0.9 * len(forked["checks"]), "too few checks got a verdict to compare"
        assert {key: (forked_statuses[key], spawned_statuses[key]) for key in both if forked_statuses[key] != spawned_statuses[key]} == {}
        assert {status == "passed" for status in spawned_statuses.values()} == ({True} if solved else {True, False})


@pytest.mark.slow  # an endless import costs its 5 s of CPU in each mode
@pytest.mark.parametrize("name", ["loop_at_import", "recursion_at_import", "fork_bomb_at_import"])
def test_a_hostile_import_is_judged_the_same_in_both_modes(rendered, tmp_path, name):
    judged = {}
    for mode in ("fork", "spawn"):
        (tmp_path / mode).mkdir()
        copy = lambda lesson, solved: shutil.copytree(rendered(lesson, solved), tmp_path / mode / "ws")  # noqa: E731
        done, took, left, _ = grade_hostile(copy, tmp_path / mode, FIXTURES / "hostile" / f"{name}.py", extra_env={"WORKSHOP_WORKER_START": mode})
        assert left == NOTHING_LEFT, mode
        report = json.loads(done.stdout)
        judged[mode] = [(entry["id"], entry["status"], re.sub(r"\d+ seen|line \d+", "N", entry["message"])) for entry in report["checks"]]
        assert {status for _, status, _ in judged[mode]} == {"error"} and "does not import" in judged[mode][0][2], judged[mode][0]
    assert judged["spawn"] == judged["fork"]  # the counts and the line an endless loop was caught on vary: N


@pytest.mark.slow  # every check spawns a worker that imports the rover again: about 8 CPU s
def test_a_spawned_worker_whose_own_import_fails_says_so(workspace, tmp_path):
    """The zygote's import passed; each spawned worker imports the rover again and that raises: every check is an
    error naming the file and line, and nothing is left."""
    done, took, left, _ = grade_hostile(workspace, tmp_path, FIXTURES / "hostile" / "import_twice.py", extra_env={"WORKSHOP_WORKER_START": "spawn"})
    assert left == NOTHING_LEFT
    report = json.loads(done.stdout)
    assert {entry["status"] for entry in report["checks"]} == {"error"}
    assert all("import of rover raised ImportError (rover/tools/read.py line" in entry["message"] for entry in report["checks"])


@pytest.mark.parametrize("side", [{}, NO_LINUX_EXTRAS], ids=["linux", "extras-off"])
def test_a_killed_grader_leaves_nothing_when_workers_are_spawned(workspace, tmp_path, side):
    root = workspace(2, solved=True)
    temp, tag = tmp_path / "tmpdir", uuid.uuid4().hex
    temp.mkdir()
    grader = subprocess.Popen([sys.executable, "-m", "grader.cli", "check", "--json"], cwd=root, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, env={**os.environ, "TMPDIR": str(temp), "WORKSHOP_TEST_TAG": tag,
                                                              "WORKSHOP_WORKER_START": "spawn", **side})
    deadline = time.monotonic() + 60
    while len(tagged(tag)) < 6 and time.monotonic() < deadline:  # the grader, its side, and keepers with their workers
        time.sleep(0.05)
    grader.send_signal(signal.SIGKILL)
    grader.wait()
    deadline = time.monotonic() + 5
    while (tagged(tag) or os.listdir(temp)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert tagged(tag) == [] and os.listdir(temp) == []
