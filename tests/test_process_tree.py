"""The student's process tree, as every clock sees it at each look: the kernel's own child lists where Linux has them
(a look per process of the tree), psutil's scan of every process on the machine elsewhere; the same tree either way."""
from __future__ import annotations

import subprocess
import sys
import time

import psutil
import pytest

from grader.boundary import processes
from grader.boundary.backends import linux_proc

SHAPE = "sleep 30 & sleep 30 & (sleep 30 & (sleep 30 & wait) & wait) & wait"  # children, grandchildren, deeper


@pytest.fixture
def shell():
    root = subprocess.Popen(["bash", "-c", SHAPE])
    deadline = time.monotonic() + 10
    while len(psutil.Process(root.pid).children(recursive=True)) < 6 and time.monotonic() < deadline:
        time.sleep(0.02)
    yield root
    processes.kill_tree([root.pid])
    root.wait()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the kernel's child lists are Linux's")
def test_the_kernel_lists_the_same_tree_psutil_finds(shell, monkeypatch):
    expected = sorted(proc.pid for proc in psutil.Process(shell.pid).children(recursive=True))
    assert linux_proc.child_pids(shell.pid) is not None, "this kernel lists children: the fast path is the one tested"
    found = processes.tree(shell.pid)
    assert found[0].pid == shell.pid and sorted(proc.pid for proc in found[1:]) == expected
    assert sorted(processes.children(shell.pid)) == sorted(proc.pid for proc in psutil.Process(shell.pid).children())
    monkeypatch.setattr(processes, "child_pids", lambda pid: None)  # a kernel without the lists: psutil's way
    assert sorted(proc.pid for proc in processes.tree(shell.pid, include_root=False)) == expected


def test_a_gone_process_has_no_tree():
    gone = subprocess.Popen(["true"])
    gone.wait()
    assert processes.tree(gone.pid) == [] and processes.children(gone.pid) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="psutil reads /proc/PID/stat on Linux")
def test_a_process_caught_mid_exit_counts_as_gone(shell, monkeypatch):
    """A process between its exit and its reaping can show an empty /proc/PID/stat, and psutil then raises an
    IndexError, not a psutil.Error (seen in CI: a Ctrl-C'd check ended with that traceback)."""
    from psutil import _pslinux

    from grader.classroom import cleanup

    dying = processes.children(shell.pid)[0]
    real = _pslinux.Process._parse_stat_file

    def empty_for_dying(self):
        if self.pid == dying:
            raise IndexError("list index out of range")  # what psutil's parser raises on an empty stat file
        return real(self)

    monkeypatch.setattr(_pslinux.Process, "_parse_stat_file", empty_for_dying)
    assert processes.process(dying) is None and not processes.running(dying)
    assert dying not in [proc.pid for proc in processes.tree(shell.pid)]
    assert shell.pid in [proc.pid for proc in processes.every_process()]
    assert processes.marked("WORKSHOP_NO_SUCH_MARK", "x") == []
    processes.gone([psutil.Process(shell.pid)], timeout=0.1)  # still running: it only waits
    cleanup.end_processes(None, "no-such-token")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the kernel's flags and pending signals are /proc's")
def test_a_process_is_ending_once_a_sigkill_is_on_its_way_and_not_before():
    # stopped first, so the SIGKILL stays pending a moment: the grader then waits for it, and for nothing else
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        assert not linux_proc.ending(sleeper.pid)
        sleeper.send_signal(19)  # SIGSTOP
        time.sleep(0.05)
        assert not linux_proc.ending(sleeper.pid)
        sleeper.kill()
        assert linux_proc.ending(sleeper.pid)  # pending, exiting or a zombie: the kernel's either way
    finally:
        sleeper.kill()
        sleeper.wait()
    assert not linux_proc.ending(sleeper.pid)
