"""Ending what student code started, and removing what it wrote, however it tried to stay.

Processes are found three ways, since code can leave each one: by process group, by a mark in the environment
that every process of a grading inherits, and as orphans handed to this process (its subreaper, on Linux). As root
(the autograder), every process of the student's user is ended at once. Folders go however deep or locked they are.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from grader.boundary import processes

MARK = "WORKSHOP_CLASS_RUN"  # carried by each grading process and everything it starts (unless scrubbed)


def kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def end_processes(group: int | None, token: str) -> None:
    """Kill the grading process's group and every process marked `token` (or `token-...`: a class's every student)."""
    if group is not None:
        kill_group(group)
    for _ in range(20):
        marked = [process for process in processes.every_process() if _marked(process, token)]
        if not marked:
            return
        for process in marked:
            try:
                process.suspend()  # frozen first, so nothing forks past us
            except processes.vanished():
                pass
        for process in marked:
            try:
                process.kill()
            except processes.vanished():
                pass
        processes.gone(marked, timeout=1)


def _marked(process, token: str) -> bool:
    try:
        mark = process.environ().get(MARK, "")
        return mark == token or mark.startswith(token + "-")
    except processes.vanished():
        return False


def give(folder: Path, uid: int, gid: int) -> None:
    """Make a folder tree (made by us: no links in it) belong to the student's user."""
    for here, folders, files in os.walk(folder):
        for name in (here, *(os.path.join(here, name) for name in folders + files)):
            os.chown(name, uid, gid, follow_symlinks=False)


def remove_tree(path: Path) -> None:
    """Remove a folder however deep or locked: permissions restored first, then `rm -rf` (no recursion in Python)."""
    if os.path.lexists(path):
        subprocess.run(["chmod", "-R", "u+rwx", str(path)], stderr=subprocess.DEVNULL, check=False)
        subprocess.run(["rm", "-rf", "--", str(path)], stderr=subprocess.DEVNULL, check=False)


def adopt_orphans() -> tuple[set[int], float]:
    """Linux: make this process the subreaper of everything the gradings start, so a process that escapes its
    grader (its parent killed, a new session, its mark scrubbed) is handed here; the state `end_orphans` needs."""
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass
    return set(processes.children(os.getpid())), time.time() - 1


def end_orphans(before: set[int], since: float) -> None:
    """Kill (and reap) every child of this process that the run started: at the run's end, all of them are leftovers."""
    for _ in range(20):
        left = [child for child in map(processes.process, processes.children(os.getpid()))
                if child is not None and child.pid not in before and _started(child) >= since]
        if not left:
            return
        for process in (member for child in left for member in [child, *_descendants(child)]):
            try:
                process.kill()
            except processes.vanished():
                pass
        for child in left:
            try:
                os.waitpid(child.pid, 0)
            except ChildProcessError:
                pass


def _real_uid(process) -> int | None:
    try:
        return process.uids().real
    except processes.vanished():
        return None


def _started(process) -> float:
    try:
        return process.create_time()
    except Exception:  # gone already
        return 0.0


def _descendants(process) -> list:
    try:
        return process.children(recursive=True)
    except Exception:
        return []


def end_user(uid: int, gid: int) -> None:
    """End every process of the user `uid` (the autograder's student): `kill -9 -1` run as that user reaches all of
    them at once, so a process that forks cannot outrun it; repeated until none is left."""
    for _ in range(20):
        if not [process for process in processes.every_process() if _real_uid(process) == uid]:
            return
        subprocess.run(["kill", "-9", "-1"], user=uid, group=gid, extra_groups=[], check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.05)
