"""`workshop watch`: grade again every time a file under rover/ is saved, like rustlings' watch mode.

Polling twice a second is enough to feel instant, and works on every filesystem (network
homes and containers included), so there is no file-event dependency. The last result stays
on screen while the next is graded, with a "grading…" line under it; the current lesson is
graded first and shown at once, then the earlier lessons, for regressions. Each run opens with
a line naming it (its number, the time, the file saved), and ends with the next step, so the
thing to do is always the last line on screen; a screen taller than the terminal loses rows
from its middle, never that end.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Iterator, TypeVar

import click

from grader.commands.screen import missing_file, root_cause, show
from grader.course.workspace import Workspace, here
from grader.grading import replays
from grader.grading.grade import Grade, checks_up_to, grade
from grader.grading.runner import run_checks

T = TypeVar("T")
FOOTER = "Watching rover/ for saves; Ctrl-C stops."
WAITING = "rover/ is gone: watching for it to come back; Ctrl-C stops."


def snapshot(folder: Path) -> dict[str, float]:
    """Modification times of the Python files under `folder`."""
    return {str(path): path.stat().st_mtime for path in folder.rglob("*.py") if "__pycache__" not in path.parts}


def watch(workspace: Workspace, interval: float = 0.2, rounds: int | None = None, console=None) -> None:
    """Re-grade whenever rover/ changes; `rounds` limits how many grades (for tests)."""
    from rich.console import Console

    console = console or Console(highlight=False)
    seen: dict[str, float] | None = None
    graded = 0
    records = replays.load(workspace.path)  # stash's test runs, replayed when the tree they ran on is the same
    while rounds is None or graded < rounds:
        current = snapshot(workspace.path / "rover")
        if current == seen:
            time.sleep(interval)
            continue
        saved = changed(seen, current, workspace.path)
        seen = current
        graded += 1
        opening = f"── run {graded} · {time.strftime('%H:%M:%S')}{f' · {saved} saved' if saved else ''} "
        for result, pending in stages(workspace, console, records):
            _clear(console)
            console.print(f"[dim]{opening.ljust(console.width, '─')}[/]")
            footer = WAITING if missing_file(workspace.path) == "rover/" else FOOTER
            draw(console, result, pending, workspace.path, f"[dim]Run {graded}, graded at {time.strftime('%H:%M:%S')}. {footer}[/]")
        replays.save(workspace.path, records)


def changed(before: dict[str, float] | None, after: dict[str, float], workspace: Path) -> str:
    """The file whose save started this run, relative to the workspace, or "" (the first run, or several)."""
    if before is None:
        return ""
    names = [name for name in set(before) | set(after) if before.get(name) != after.get(name)]
    return Path(names[0]).relative_to(workspace).as_posix() if len(names) == 1 else ""


def draw(console, result: Grade, pending: bool, workspace: Path, footer: str) -> None:
    """The screen, cut to the terminal's height from its middle: the next step stays the last line."""
    if not console.is_terminal:
        show(result, pending=pending, workspace=workspace, console=console, footer=footer)
        return
    with console.capture() as captured:
        show(result, pending=pending, workspace=workspace, console=console, footer=footer)
    lines = captured.get().rstrip("\n").split("\n")
    room = console.height - 2  # the run's opening line, and the cursor's
    if len(lines) > room:
        tail = len(lines) - max((index for index, line in enumerate(lines) if not line.strip()), default=len(lines) - 2)
        cut = len(lines) - room + 1
        lines = lines[:room - tail - 1] + [f"\x1b[2m  … {cut} more lines: `workshop check` shows them all\x1b[0m"] + lines[-tail:]
    console.file.write("\n".join(lines) + "\n")
    console.file.flush()


def stages(workspace: Workspace, console, replays: dict[str, str] | None = None) -> Iterator[tuple[Grade, bool]]:
    """(grade, pending) twice: the current lesson alone first, then with the earlier lessons' checks."""
    number = workspace.lesson
    now = _waiting(console, f"grading lesson {number}…", lambda: grade(workspace, only=number, replays=replays))
    if number == 0 or root_cause(now):
        yield now, False
        return
    yield now, True
    name = "lesson 0" if number == 1 else f"lessons 0-{number - 1}"
    earlier = _waiting(console, f"checking {name} for regressions…",
                       lambda: run_checks(workspace.path, checks_up_to(number - 1), replays=replays))
    yield Grade(number, earlier + now.outcomes, now.root_cause), False


def _waiting(console, label: str, work: Callable[[], T]) -> T:
    """Run `work` in the background under a spinner, so Ctrl-C is heard at once, not when grading ends."""
    done: dict[str, object] = {}
    finished = threading.Event()  # not Thread.join: on 3.11 a Ctrl-C inside join() marks a running thread stopped

    def run() -> None:
        try:
            done["value"] = work()
        except BaseException as failure:  # handed to the main thread below
            done["failure"] = failure
        finally:
            finished.set()

    threading.Thread(target=run, daemon=True).start()  # its lanes inherit daemon: exit never waits on them
    spinner = console.status(f"[dim]{label}[/]") if console.is_terminal else contextlib.nullcontext(console.print(f"[dim]{label}[/]"))
    try:
        with spinner:
            while not finished.wait(0.1):
                pass
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # we are stopping: a second Ctrl-C changes nothing
        _stop(finished)
        raise
    if "failure" in done:
        raise done["failure"]  # type: ignore[misc]
    return done["value"]  # type: ignore[return-value]


def _clear(console) -> None:
    if console.is_terminal:
        console.clear()


def _stop(finished: threading.Event, patience: float = 5.0) -> None:
    """Kill the grade's workers until it gives up: its lanes start a fresh worker for each check left."""
    deadline = time.monotonic() + patience
    while not finished.is_set() and time.monotonic() < deadline:
        stop_workers()
        finished.wait(0.02)
    stop_workers()


def stop_workers() -> None:
    """End the grader's worker processes (each in a session of its own) now, not when their checks finish."""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        found = subprocess.run(["pgrep", "-P", str(os.getpid()), "-f", "grader.boundary.worker"],
                               capture_output=True, text=True, timeout=5).stdout
        for pid in found.split():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(int(pid), signal.SIGKILL)


@click.command("watch")
@click.option("--interval", type=click.FloatRange(min=0.05), default=0.2, show_default=True, help="Seconds between looks for a save.")
def watch_command(interval: float) -> None:
    """Re-run the check every time you save a file in rover/."""
    workspace = here()
    # The workers' scratch files go into one folder of ours, so a Ctrl-C that kills them mid-check leaves nothing behind.
    scratch = tempfile.mkdtemp(prefix="workshop-watch-")
    os.environ["TMPDIR"] = scratch
    ended_by: list[int] = []

    def ended(signum, frame) -> None:  # a closed terminal (SIGHUP) or a `kill` (SIGTERM): stop as a Ctrl-C does, cleanly
        ended_by.append(signum)
        raise KeyboardInterrupt

    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, ended)
    try:
        watch(workspace, interval)
    except KeyboardInterrupt:
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_IGN)  # a second signal while stopping changes nothing
        shutil.rmtree(scratch, ignore_errors=True)
        with contextlib.suppress(OSError):  # a closed terminal takes stdout with it
            click.echo("\nStopped watching.")
            sys.stdout.flush()
        os._exit(128 + ended_by[0] if ended_by else 130)  # at once (a grade still running has nothing left to say)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
