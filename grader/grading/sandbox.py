"""The run's boundary: one folder for every temp file, and every process the run started found and ended.

A `RunFolder` is made when a run starts and closed when it ends, however it ends. Closing
kills every process the run started (the workers, their children, and any daemon or new
session they made) and removes the folder. Processes are found from outside, in /proc: the
ones whose environment carries the run's token, everything below them, and the orphans that
were handed to the grader while the run went on (it is their subreaper, Linux only).
"""
from __future__ import annotations

import ctypes
import os
import shutil
import itertools
import signal
import tempfile
import time
from pathlib import Path

MAX_ANSWER = 32 << 20  # bytes of one answer line from a worker; the worker says so instead of sending more
CRASH_LOG = "crash.log"  # in each worker's scratch cwd: faulthandler's traceback of a hang or a crash
MARK = "WORKSHOP_RUN"  # the env var every worker (and, unless it scrubs it, everything below it) carries
PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36


def prctl(option: int, value: int) -> bool:
    """One Linux prctl call; False where it is not available (the run is then less tidy, never wrong)."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


class RunFolder:
    """mkdtemp(prefix="workshop-check-"): tmp/ (the workers' TMPDIR), scratch-N/ (their cwd), check-N/ (lab.tmp)."""

    def __init__(self) -> None:
        self.path = Path(tempfile.mkdtemp(prefix="workshop-check-"))
        self.tmp = self.path / "tmp"
        self.tmp.mkdir()
        self.token = os.urandom(8).hex()
        self.started = _boot_ticks()
        self.before = set(children(os.getpid()))
        prctl(PR_SET_CHILD_SUBREAPER, 1)
        self._numbers = itertools.count(1)  # next() on it is atomic: lanes make folders at once

    def folder(self, kind: str) -> Path:
        path = self.path / f"{kind}-{next(self._numbers)}"
        path.mkdir()
        return path

    def env(self) -> dict[str, str]:
        return {MARK: self.token, "TMPDIR": str(self.tmp), "TEMP": str(self.tmp), "TMP": str(self.tmp)}

    def close(self) -> None:
        sweep(self.token, self.before, self.started)
        shutil.rmtree(self.path, ignore_errors=True)
        if self.path.exists():  # a file written while the tree was removed: one more pass
            time.sleep(0.05)
            shutil.rmtree(self.path, ignore_errors=True)


def sweep(token: str, before: set[int], started: int) -> None:
    """End every process of the run: marked ones, their descendants, and orphans reparented to us."""
    me = os.getpid()
    roots = [pid for pid in children(me) if pid not in before and _started(pid) >= started and _mark(pid) in (token, None)]
    roots += [pid for pid in _all_pids() if pid != me and _mark(pid) == token]
    kill_tree(roots)
    for pid in roots:  # reap the ones that were our children, so no zombie stays behind in a long-lived host
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass


def kill_tree(roots: list[int], include_roots: bool = True) -> None:
    """Freeze the trees (so nothing forks past us), then kill them all."""
    frozen: set[int] = set()
    for _ in range(50):
        found = {pid for root in roots for pid in descendants(root, include_roots)} - frozen
        if not found:
            break
        for pid in found:
            _signal(pid, signal.SIGSTOP)
        frozen |= found
    for pid in frozen:
        _signal(pid, signal.SIGKILL)


def descendants(root: int, include_root: bool = True) -> list[int]:
    found, todo = ([root] if include_root else []), [root]
    while todo:
        for child in children(todo.pop()):
            if child not in found:
                found.append(child)
                todo.append(child)
    return found


def children(pid: int) -> list[int]:
    """Every live child of pid, whichever of its threads started it."""
    found = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            try:
                found += [int(child) for child in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
            except OSError:
                pass
    except OSError:
        pass
    return found


def exit_story(code: int | None) -> str:
    """How a process ended, from its exit status (128+N or -N: killed by signal N)."""
    number = -code if code is not None and code < 0 else (code - 128 if code is not None and code > 128 else 0)
    if number in signal.valid_signals():
        return f"was killed by signal {number} ({signal.Signals(number).name})"
    return f"ended (exit status {code})" if code is not None else "ended"

def running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False

def comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


def _all_pids() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []


def _mark(pid: int) -> str | None:
    """The run token in a process's starting environment, or None."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    for entry in environ.split(b"\0"):
        if entry.startswith(MARK.encode() + b"="):
            return entry.split(b"=", 1)[1].decode(errors="replace")
    return None


def _started(pid: int) -> int:
    """Start time of a process in clock ticks since boot (field 22 of /proc/PID/stat)."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return 0


def _boot_ticks() -> int:
    try:
        return int(float(Path("/proc/uptime").read_text().split()[0]) * os.sysconf("SC_CLK_TCK")) - 1
    except (OSError, ValueError):
        return 0


def _signal(pid: int, number: int) -> None:
    try:
        os.kill(pid, number)
    except (ProcessLookupError, PermissionError):
        pass
