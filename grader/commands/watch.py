"""`workshop watch`: grade again every time a file under rover/ is saved, like rustlings' watch mode.

Polling twice a second is enough to feel instant, and works on every filesystem (network
homes and containers included), so there is no file-event dependency.
"""
from __future__ import annotations

import time
from pathlib import Path

import click

from grader.commands.check import show
from grader.grading.grade import grade
from grader.course.workspace import Workspace, here


def snapshot(folder: Path) -> dict[str, float]:
    """Modification times of the Python files under `folder`."""
    return {str(path): path.stat().st_mtime for path in folder.rglob("*.py") if "__pycache__" not in path.parts}


def watch(workspace: Workspace, interval: float = 0.5, rounds: int | None = None) -> None:
    """Re-grade whenever rover/ changes; `rounds` limits how many grades (for tests)."""
    seen: dict[str, float] | None = None
    graded = 0
    while rounds is None or graded < rounds:
        current = snapshot(workspace.path / "rover")
        if current != seen:
            seen = current
            click.clear()
            result = grade(workspace)
            show(result)
            graded += 1
            first = result.first_failure()
            if first is not None:
                click.echo(f"\nHint: {first.check.hints[0]}")
            click.echo("\nWatching rover/ for saves. Ctrl-C to stop.")
        else:
            time.sleep(interval)


@click.command("watch")
@click.option("--interval", type=click.FloatRange(min=0.1), default=0.5, show_default=True, help="Seconds between looks.")
def watch_command(interval: float) -> None:
    """Re-run the check every time you save a file in rover/."""
    try:
        watch(here(), interval)
    except KeyboardInterrupt:
        click.echo("\nStopped watching.")
