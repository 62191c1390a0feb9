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
