"""The boundary around student code: one small interface, a backend per system, chosen once per run.

    bwrap      Linux: bubblewrap namespaces (no network, no view of the caller's files, one writable folder)
    seatbelt   macOS: a generated sandbox-exec profile (writes only under the run folder, no network)
    process    anywhere: processes with limits, the caller's user and view (the fallback)

`WORKSHOP_SANDBOX=NAME` forces one. `choose()` is for `workshop check` (it falls back to `process`, and the run says
so); `require()` is for bulk grading and autograders (it refuses, in one line, where no real boundary can run).
The runner and the checks never ask which backend they got.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Protocol

from grader.boundary.backends.process import environment  # noqa: F401  (part of the interface; it lives with the backend every other builds on)
from grader.boundary.processes import Usage
from grader.boundary.runfolder import MARK, RunFolder
from grader.errors import WorkshopError

NAMES = ("bwrap", "seatbelt", "process")
FALLBACK_NOTE = "no sandbox on this machine ({why}): your code runs with your own rights; grades are the same"


class NoBoundary(WorkshopError):
    """No real boundary can run here; the message is one line naming what is missing and how to install it."""


class Boundary(Protocol):
    name: str
    first_pid: int  # the started command's pid, as the side numbers it

    def start(self, command: list[str], folder: RunFolder, workspace: Path, pass_fds: tuple[int, ...], cwd: Path) -> subprocess.Popen:
        """Start the student's side (the zygote command) in this run folder, with the allow-listed environment."""

    def host_pid(self, pid: int) -> int | None:
        """A process id as the student's side numbers it, as the grader sees it (None: not one of the side's)."""

    def processes(self) -> list:
        """Every process of the student's side (psutil.Process objects)."""

    def usage(self) -> Usage:
        """CPU seconds and memory of the whole side."""

    def end(self) -> None:
        """End every process of the side; safe to call twice."""


def choose() -> Boundary:
    """The backend `workshop check` uses: the forced one, else the best that can run here, else `process`."""
    forced = _forced()
    if forced:
        return _make(forced)
    for name in _preferred():
        if _why_not(name) is None:
            return _make(name)
    return _make("process")


def require() -> str:
    """The name of the real boundary a run will use, or NoBoundary saying in one line what is missing."""
    forced = _forced()
    if forced == "process":
        raise NoBoundary("WORKSHOP_SANDBOX=process asks for no sandbox; give --unsafe-no-sandbox to grade without one")
    if forced:
        return forced
    reasons = [reason for reason in map(_why_not, _preferred()) if reason]
    if len(reasons) < len(_preferred()):
        return next(name for name in _preferred() if _why_not(name) is None)
    raise NoBoundary(reasons[0] if reasons else f"no sandbox is built for {sys.platform} yet: use WSL2 or the dev container, "
                     "or give --unsafe-no-sandbox")


def fallback_reason() -> str:
    """Why `choose()` fell back to `process` (one short clause), or '' if it was asked for or not used."""
    if _forced():
        return ""
    reasons = [reason for reason in map(_why_not, _preferred()) if reason]
    return reasons[0] if reasons else f"none is built for {sys.platform}"


def in_process_note(name: str) -> str:
    """The one line every run graded in the process fallback says (on screen and in every report), forced or not;
    '' for a real boundary."""
    if name != "process":
        return ""
    return FALLBACK_NOTE.format(why=fallback_reason() or "WORKSHOP_SANDBOX=process asks for none")


def _preferred() -> tuple[str, ...]:
    if sys.platform.startswith("linux"):
        return ("bwrap",)
    if sys.platform == "darwin":
        return ("seatbelt",)
    return ()


def _forced() -> str:
    name = os.environ.get("WORKSHOP_SANDBOX", "").strip()
    if not name:
        return ""
    if name not in NAMES:
        raise WorkshopError(f"WORKSHOP_SANDBOX={name}: not a sandbox of this kit; use one of {', '.join(NAMES)}")
    why = _why_not(name)
    if why:
        raise WorkshopError(f"WORKSHOP_SANDBOX={name}: {why}")
    return name


def _why_not(name: str) -> str | None:
    from grader.boundary.backends import bwrap, seatbelt

    return {"bwrap": bwrap.why_not, "seatbelt": seatbelt.why_not}.get(name, lambda: None)()


def _make(name: str) -> Boundary:
    from grader.boundary.backends import bwrap, process, seatbelt

    return {"bwrap": bwrap.Bwrap, "seatbelt": seatbelt.Seatbelt, "process": process.Processes}[name]()


__all__ = ["Boundary", "NoBoundary", "MARK", "choose", "require", "environment", "in_process_note"]
