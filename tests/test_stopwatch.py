"""Wall-clock limits judged fairly: late only because the machine held the code back is "too busy", never a failure.

A busy machine is simulated, never made: run-queue waits are patched in (as if the processes had sat waiting for a
CPU), and the load average where the system does not tell the waits.
"""
from __future__ import annotations

import re
import subprocess
import time
from types import SimpleNamespace

import pytest

from grader.course import kit
from grader.boundary.clocks import CheckTimeout, Clock
from grader.grading.lab import Lab
from grader.boundary.processes import Usage
from grader.grading.runner import BUSY, run_checks
from grader.boundary.stopwatch import Lap, TooBusy


def test_a_lap_within_its_limit_is_in_time_however_busy_the_machine():
    assert Lap(wall=0.9, held=0.0).late(1) is False
    assert Lap(wall=0.9, held=None).late(1) is False


def test_late_only_because_the_machine_held_the_code_back_is_too_busy():
    with pytest.raises(TooBusy) as raised:
        Lap(wall=7.5, held=3.0).late(5)  # 4.5 s of its own: in time
    assert raised.value.kind == "busy"


def test_late_by_more_than_the_machine_explains_is_the_code_s():
    assert Lap(wall=7.5, held=2.0).late(5) is True  # 5.5 s of its own
    assert Lap(wall=31.0, held=0.1).late(5) is True


def test_what_the_code_had_no_cpu_to_do_is_excused_only_when_the_machine_held_it_back_that_long(monkeypatch):
    Lap(wall=1.2, held=0.3).excuse(1)  # held back 0.3 s: it had time enough, so what it left undone is its own
    with pytest.raises(TooBusy):
        Lap(wall=1.2, held=1.1).excuse(1)
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    monkeypatch.setattr("os.getloadavg", lambda: (0.5, 0.5, 0.5))
    Lap(wall=1.2, held=None).excuse(1)


def test_where_the_system_does_not_say_an_overloaded_machine_is_taken_as_the_cause(monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    monkeypatch.setattr("os.getloadavg", lambda: (9.0, 9.0, 9.0))
    with pytest.raises(TooBusy):
        Lap(wall=6.0, held=None).late(5)
    assert Lap(wall=31.0, held=None).late(5) is True  # past the backstop: no machine explains that
    monkeypatch.setattr("os.getloadavg", lambda: (0.5, 0.5, 0.5))
    assert Lap(wall=6.0, held=None).late(5) is True


def test_the_clock_keeps_the_waits_of_processes_that_ended_between_two_looks(monkeypatch):
    looks = iter([{1: 5.0, 2: 1.0}, {1: 5.5, 2: 1.75, 3: 0.25}, {1: 6.0}])  # 2 and 3 ended after the second look
    monkeypatch.setattr("grader.boundary.processes.run_wait", lambda procs: next(looks))
    monkeypatch.setattr("grader.boundary.processes.usage", lambda procs: Usage())
    monkeypatch.setattr("grader.boundary.processes.cpu", lambda procs: 0.0)  # the clock's zero
    clock = Clock(10, tree=lambda: [SimpleNamespace(pid=1, nice=lambda: 0)]).begin()  # the first look is the zero
    assert clock.waited() == pytest.approx(1.5)
    assert clock.waited() == pytest.approx(2.0)


def test_a_clock_on_a_system_without_run_queue_figures_says_none(monkeypatch):
    monkeypatch.setattr("grader.boundary.processes.run_wait", lambda procs: None)
    assert Clock(10, tree=lambda: []).begin().waited() is None


class _Now:
    """A stand-in for clocks.time: the test says what time it is."""

    def __init__(self) -> None:
        self.now = 100.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def still_tree(monkeypatch):
    """A clock on a tree of one process (pid 1, the worker: its own) that uses no CPU, at a time the test sets."""
    now = _Now()
    monkeypatch.setattr("grader.boundary.clocks.time", now)
    monkeypatch.setattr("grader.boundary.processes.usage", lambda procs: Usage(cpu=0.1))
    monkeypatch.setattr("grader.boundary.processes.cpu", lambda procs: 0.1)  # the clock's zero
    return now, (lambda budget: Clock(budget, tree=lambda: [SimpleNamespace(pid=1, nice=lambda: 0)], own=(1,)).begin())


def _look_at(clock: Clock, now: _Now, seconds: float) -> None:
    now.now = 100.0 + seconds
    clock.check()


def test_a_grader_held_back_between_two_looks_does_not_count_the_gap_as_the_code_s_idleness(still_tree, monkeypatch):
    now, make = still_tree
    monkeypatch.setattr("grader.boundary.processes.runnable", lambda procs: False)
    monkeypatch.setattr("grader.boundary.processes.run_wait", lambda procs: {1: 0.0})
    clock = make(1.0)
    _look_at(clock, now, 0.25)  # the first look: CPU so far, the zero of idleness
    _look_at(clock, now, 3.0)  # the grader's own thread got no CPU for 2.75 s: it saw the tree idle for one look only
    _look_at(clock, now, 3.25)
    _look_at(clock, now, 3.5)
    with pytest.raises(CheckTimeout) as late:  # a second of idleness seen look by look: a wait
        _look_at(clock, now, 3.75)
    assert late.value.kind == "wait"


def test_at_the_backstop_the_waits_of_commands_that_ended_still_count(still_tree, monkeypatch):
    """A command starved for 2.7 s, then ended: the tree was held back by the machine, not asleep."""
    now, make = still_tree
    monkeypatch.setattr("grader.boundary.processes.runnable", lambda procs: True)
    monkeypatch.setattr("grader.boundary.processes.run_wait",
                        lambda procs: {1: 0.0, 2: 0.9 * (now.now - 100)} if now.now < 103 else {1: 0.0})
    clock = make(1.0)
    for look in range(1, 17):
        _look_at(clock, now, look * 0.25)
    with pytest.raises(CheckTimeout) as late:
        _look_at(clock, now, 4.25)
    assert late.value.kind == "busy"


def test_at_the_backstop_the_time_the_tree_waited_on_a_slow_grader_is_not_the_code_s_sleep(still_tree, monkeypatch):
    """Each second the grader took 0.75 s to answer (its own work on a busy machine): the tree waited on it, not asleep."""
    now, make = still_tree
    monkeypatch.setattr("grader.boundary.processes.runnable", lambda procs: False)
    monkeypatch.setattr("grader.boundary.processes.run_wait", lambda procs: {1: 0.0})
    clock = make(1.0)
    for second in range(4):
        _look_at(clock, now, second + 0.25)
        now.now = 100.0 + second + 1.0
        clock.waiting()  # the grader's answer (a model's reply) goes out 0.75 s after its last look
    with pytest.raises(CheckTimeout) as late:
        _look_at(clock, now, 4.25)
    assert late.value.kind == "busy"


def test_at_the_backstop_a_tree_that_mostly_slept_is_a_wait(still_tree, monkeypatch):
    now, make = still_tree
    monkeypatch.setattr("grader.boundary.processes.runnable", lambda procs: True)  # a moment's work at every look
    monkeypatch.setattr("grader.boundary.processes.run_wait", lambda procs: {1: 0.0})
    clock = make(1.0)
    for look in range(1, 17):
        _look_at(clock, now, look * 0.25)
    with pytest.raises(CheckTimeout) as late:
        _look_at(clock, now, 4.25)
    assert late.value.kind == "wait"


def _late_bash(root, seconds: float) -> None:
    """The reference bash tool, answering `seconds` late (as a starved process would)."""
    bash = root / "rover/tools/bash.py"
    bash.write_text(bash.read_text() + f"\n_real = run\n\ndef run(cwd, command, timeout=DEFAULT_TIMEOUT):\n"
                    f"    import time\n    result = _real(cwd, command, timeout)\n    time.sleep({seconds})\n    return result\n")


def _bash_check(check_id: str) -> list[kit.Check]:
    return [check for check in kit.lesson(2).checks if check.id == check_id]


def test_a_timeout_answered_late_on_a_starved_machine_is_too_busy_not_a_failure(workspace, monkeypatch):
    """Every second of the call, each process waited a second for a CPU: the 5 s it took are the machine's."""
    monkeypatch.setattr("grader.boundary.processes.run_wait", lambda procs: {proc.pid: time.monotonic() for proc in procs})
    root = workspace(2, solved=True)
    _late_bash(root, 4.5)
    [outcome] = run_checks(root, _bash_check("bash.timeout"), jobs=1)
    assert (outcome.status, outcome.message) == ("error", BUSY), outcome
    assert outcome.busy


def test_a_timeout_answered_late_on_an_idle_machine_is_the_code_s(workspace, monkeypatch):
    monkeypatch.setattr("grader.boundary.processes.run_wait", lambda procs: {proc.pid: 0.0 for proc in procs})
    monkeypatch.setattr("grader.boundary.processes.thread_wait", lambda: 0.0)
    root = workspace(2, solved=True)
    _late_bash(root, 4.5)
    [outcome] = run_checks(root, _bash_check("bash.timeout"), jobs=1)
    assert outcome.status == "failed", outcome
    assert re.fullmatch(r"a 0\.6-second timeout should return in about 0\.6 s, it took [5-9]\.\d s", outcome.message), outcome


@pytest.fixture
def sleeper(workspace, tmp_path):
    lab = Lab.in_process(workspace(2, solved=True), tmp_path)
    child = subprocess.Popen(["sleep", "60"])
    yield lab, child
    child.kill()
    child.wait()
    lab.close()


def test_a_process_asleep_past_its_time_outlives_it(sleeper):
    lab, child = sleeper
    started = time.monotonic()
    assert lab.outlives(child.pid, 0.3) is True
    assert time.monotonic() - started < 2


def test_a_process_that_ends_does_not_outlive_its_time(sleeper):
    lab, child = sleeper
    child.kill()
    assert lab.outlives(child.pid, 5) is False  # killed, then a zombie until reaped: not running


def test_a_killed_process_still_waiting_for_a_cpu_to_end_on_is_the_machine_s(sleeper, monkeypatch):
    """Runnable all along (as a killed process is until it gets a CPU): given time, then too busy, never 'alive'."""
    lab, child = sleeper
    monkeypatch.setattr("grader.boundary.clocks.BACKSTOP", 3.0)
    monkeypatch.setattr(type(lab._worker), "runnable", lambda self, pid: True)
    started = time.monotonic()
    with pytest.raises(TooBusy):
        lab.outlives(child.pid, 0.3)
    assert time.monotonic() - started >= 0.9
