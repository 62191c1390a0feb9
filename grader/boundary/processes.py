"""Processes, seen from outside, through psutil (Linux, macOS, Windows): trees, what they use, and their end.

psutil is imported on first use, never at import time: commands that grade nothing stay fast.
"""
from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass

from grader.boundary.backends.linux_proc import child_pids, ending, held_memory, held_memory_ceiling, lowered_on_linux, run_wait, thread_wait  # noqa: F401  (the waits: for the clocks; ending: for the proxy)


def _psutil():
    import psutil

    return psutil


def vanished() -> tuple[type[BaseException], ...]:
    """What psutil may raise about a process that is ending or gone. Not only psutil.Error: a process caught between
    exiting and being reaped can show an empty /proc/PID/stat, which psutil turns into an IndexError (or a ValueError)."""
    return (_psutil().Error, OSError, IndexError, ValueError)


def every_process() -> list:
    """Every process of the machine that is still there (psutil.process_iter, whose own catch is narrower)."""
    return [proc for proc in map(process, _psutil().pids()) if proc is not None]


@dataclass(frozen=True)
class Usage:
    """What a process tree has used: CPU seconds (user + system, children included) and memory (bytes)."""

    cpu: float = 0.0
    memory: int = 0
    processes: int = 0


def process(pid: int):
    """The psutil.Process for pid, or None if it is gone."""
    try:
        return _psutil().Process(pid)
    except vanished():
        return None


def tree(pid: int, include_root: bool = True) -> list:
    """pid and everything below it (psutil.Process objects), daemons that reparented to a subreaper in it included."""
    root = process(pid)
    if root is None:
        return []
    below = _descendants(pid)
    if below is None:  # the kernel does not list children: psutil finds them from every process's parent
        try:
            return ([root] if include_root else []) + root.children(recursive=True)
        except vanished():
            return [root] if include_root else []
    return ([root] if include_root else []) + [proc for proc in map(process, below) if proc is not None]


def children(pid: int) -> list[int]:
    found = child_pids(pid)
    if found is not None:
        return found
    proc = process(pid)
    try:
        return [child.pid for child in proc.children()] if proc else []
    except vanished():
        return []


def _descendants(pid: int) -> list[int] | None:
    """Every pid below pid, parents before children, from the kernel's own child lists (None where it has none).
    Each poll of every clock walks a tree: this costs a look per process of the tree, not per process of the machine."""
    first = child_pids(pid)
    if first is None:
        return None
    found, seen, todo = [], {pid}, [first]
    while todo:
        for child in todo.pop():
            if child not in seen:
                seen.add(child)
                found.append(child)
                todo.append(child_pids(child) or [])
    return found


def running(pid: int) -> bool:
    """Alive and not a zombie."""
    found = process(pid)
    try:
        return found is not None and found.status() not in (_psutil().STATUS_ZOMBIE, _psutil().STATUS_DEAD)
    except vanished():
        return False


def name(pid: int) -> str:
    found = process(pid)
    try:
        return found.name() if found else "?"
    except vanished():
        return "?"


def command_line(proc) -> str:
    try:
        return " ".join(proc.cmdline()) or proc.name()
    except vanished():
        return "?"


def usage(procs: list) -> Usage:
    """CPU and memory of these processes together. Memory is what the code holds: its anonymous memory, shared
    anonymous memory (MAP_SHARED, shm) included; a file mapped from disk is the page cache's, not the code's. On Linux
    it is each process's proportional share (PSS) of those pages, so memory two processes share counts once."""
    cpu, memory, count = 0.0, 0, 0
    for proc in procs:
        try:
            with proc.oneshot():
                times = proc.cpu_times()
                held = held_memory(proc.pid)
                if held is None:
                    resident = proc.memory_info()
                    held = resident.rss - getattr(resident, "shared", 0)
        except vanished():
            continue
        cpu += times.user + times.system + getattr(times, "children_user", 0.0) + getattr(times, "children_system", 0.0)
        memory += held
        count += 1
    return Usage(cpu, memory, count)


def cpu(procs: list) -> float:
    """CPU seconds of these processes together (user + system, children they reaped included): usage() without the
    memory, which costs a walk of every mapping of every process."""
    total = 0.0
    for proc in procs:
        try:
            times = proc.cpu_times()
        except vanished():
            continue
        total += times.user + times.system + getattr(times, "children_user", 0.0) + getattr(times, "children_system", 0.0)
    return total


def code_memory(procs: list, root: int, ceiling: bool = False) -> int:
    """The memory the student's Python code holds across these processes: the root's anonymous memory, plus what
    each Python process it forked (or started) holds of its own (USS: a fork shares the root's pages until it
    writes them, so a fork about to exec another program counts next to nothing). Other programs (bash, rg) are
    not the code's own memory; the tree's limit bounds them. `ceiling`: a cheap figure never below that one (Linux;
    elsewhere the figure itself), for a sampler to skip the exact reading while it cannot raise the peak."""
    read = held_memory_ceiling if ceiling else held_memory
    total, python, mine = 0, None, None
    for proc in sorted(procs, key=lambda proc: proc.pid != root):  # the root first: its program is the Python one
        try:
            if proc.pid == root:
                resident = proc.memory_info()
                held = read(proc.pid)  # shared anonymous memory (a MAP_SHARED buffer) is the code's too
                total += resident.rss - getattr(resident, "shared", 0) if held is None else held
                python, mine = proc.exe(), (resident.rss, resident.vms)
            elif proc.exe() == python:
                resident = proc.memory_info()
                if (resident.rss, resident.vms) != mine:  # the same figures: a vfork child on the root's own memory
                    held = read(proc.pid)  # its share of what it holds with the root (PSS): the sum stays the truth
                    total += proc.memory_full_info().uss if held is None else held
        except vanished():
            continue
    return total


def runnable(procs: list) -> bool:
    """Is any of them running or waiting for a CPU or a disk (rather than asleep, waiting on something)?"""
    for proc in procs:
        try:
            if proc.status() in (_psutil().STATUS_RUNNING, _psutil().STATUS_DISK_SLEEP):
                return True
        except vanished():
            pass
    return False


def machine_busy() -> float:
    """CPU seconds the whole machine has spent busy since boot (every core, every program)."""
    times = _psutil().cpu_times()
    idle = times.idle + getattr(times, "iowait", 0.0)
    return sum(times) - idle - getattr(times, "guest", 0.0) - getattr(times, "guest_nice", 0.0)


def lowered(procs: list) -> bool:
    """Did any of them lower its own priority below the grader's (a higher nice; on Linux, any thread's nice or
    SCHED_IDLE/SCHED_BATCH, or its autogroup's nice)? Its waits for a CPU are then its own doing, not the machine's."""
    ours = os.getpriority(os.PRIO_PROCESS, 0)
    for proc in procs:
        try:
            if proc.nice() > ours or lowered_on_linux(proc.pid, ours):
                return True
        except vanished():
            pass
    return False


def kill_tree(pids: list[int], include_roots: bool = True) -> list:
    """Freeze the trees (so nothing forks past us), then kill them all; the processes killed (see `gone`)."""
    frozen: dict[int, object] = {}
    for _ in range(50):
        found = [proc for pid in pids for proc in tree(pid, include_roots) if proc.pid not in frozen]
        if not found:
            break
        for proc in found:
            frozen[proc.pid] = proc
            try:
                proc.suspend()
            except vanished():
                pass
    for proc in frozen.values():
        try:
            proc.kill()
        except vanished():
            pass
    return list(frozen.values())


def gone(procs: list, timeout: float = 3.0) -> None:
    """Wait (at most `timeout`) until these killed processes have ended: a killed tree of hundreds takes a moment to
    die on a busy machine, and a run must not end while any of it is still there."""
    deadline = time.monotonic() + timeout
    for _ in range(5):
        try:
            _psutil().wait_procs(procs, timeout=max(0.0, deadline - time.monotonic()))
            return
        except vanished():  # one ended as it was looked at: the rest, once more
            procs = [proc for proc in procs if running(proc.pid)]


def marked(variable: str, token: str) -> list[int]:
    """Every process whose starting environment carries variable=token (the ones we may read)."""
    found = []
    for proc in every_process():
        try:
            if proc.environ().get(variable) == token:
                found.append(proc.pid)
        except vanished():
            pass
    return found


def exit_story(code: int | None) -> str:
    """How a process ended, from its exit status (128+N or -N: killed by signal N)."""
    number = -code if code is not None and code < 0 else (code - 128 if code is not None and code > 128 else 0)
    if number in signal.valid_signals():
        return f"was killed by signal {number} ({signal.Signals(number).name})"
    return f"ended (exit status {code})" if code is not None else "ended"
