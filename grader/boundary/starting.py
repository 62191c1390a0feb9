"""How the student's side starts its keepers and workers: forked from the zygote, or each a fresh interpreter.

    fork   the default on Linux: the zygote forks each keeper, the keeper its worker, so a worker starts in
           milliseconds with the student's rover imported already.
    spawn  the default on macOS (a fork after imports is unsafe there once system frameworks are loaded, which is
           why Python itself spawns there), wherever os.fork is missing, and with the Linux extras off (what macOS
           and a dev container look like): each keeper and worker is a new interpreter, started with posix_spawn
           inside the same boundary, that imports what it needs itself.

`WORKSHOP_WORKER_START=fork|spawn` forces one. The grader chooses (`mode()`) and hands the choice to the zygote.
"""
from __future__ import annotations

import os
import sys

from grader.boundary.linux import extras

MODES = ("fork", "spawn")


def mode() -> str:
    """The forced mode, else fork where it is safe and the Linux extras are on, else spawn; bad input is one line."""
    forced = os.environ.get("WORKSHOP_WORKER_START", "").strip()
    if forced:
        from grader.errors import WorkshopError

        if forced not in MODES:
            raise WorkshopError(f"WORKSHOP_WORKER_START={forced}: not a way to start workers; use fork or spawn")
        if forced == "fork" and not hasattr(os, "fork"):
            raise WorkshopError("WORKSHOP_WORKER_START=fork: this system has no fork; use spawn")
        return forced
    return "fork" if hasattr(os, "fork") and extras() else "spawn"


def command(path: list[str], *args: str) -> list[str]:
    """`python -I -S` running grader.boundary.worker.main(args) with exactly this sys.path (the grader's own).

    -I -S: no site (its .pth hooks cost ~40 ms a start), no PYTHON* variables; the path is handed over in the command
    itself, so the process imports exactly this grader and nothing a workspace could shadow."""
    boot = f"import sys; sys.path[:] = {path!r}; from grader.boundary.worker import main; main(sys.argv[1:])"
    return [sys.executable, "-I", "-S", "-c", boot, *args]


def spawn(path: list[str], args: list[str], fds: tuple[int, ...]) -> int:
    """A fresh interpreter running `main(args + fds)`, given these descriptors and no other but stdio; its pid.

    posix_spawn, never a fork of this (imported) interpreter; the environment, limits, ignored signals and the
    working folder are this process's."""
    argv = command(path, *args, *map(str, fds))
    for fd in fds:
        os.set_inheritable(fd, True)
    try:
        return os.posix_spawn(argv[0], argv, os.environ)
    finally:
        for fd in fds:
            os.set_inheritable(fd, False)
