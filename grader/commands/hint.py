"""`workshop hint [CHECK] [--level K]`: one hint at a time, for the first failing check or a named one.

Each call without --level shows the next level for that check, like asking a teacher twice;
what was shown is remembered in .git/workshop-hints.json, out of the student's way.
"""
from __future__ import annotations

import difflib
import json
from pathlib import Path

import click

from grader.course import kit
from grader.errors import WorkshopError
from grader.grading.grade import checks_up_to, grade
from grader.course.workspace import here


def _memory(workspace_path: Path) -> Path:
    return workspace_path / ".git" / "workshop-hints.json"


def next_level(workspace_path: Path, check_id: str, count: int) -> int:
    """The level to show now: one more than last time, stopping at the last."""
    memory = _memory(workspace_path)
    seen = json.loads(memory.read_text()) if memory.is_file() else {}
    level = min(seen.get(check_id, 0) + 1, count)
    if memory.parent.is_dir():
        memory.write_text(json.dumps({**seen, check_id: level}))
    return level


@click.command("hint")
@click.argument("check_id", required=False, metavar="[CHECK]")
@click.option("--level", type=click.IntRange(min=1), help="Show this hint level (1 is a nudge, the last is the technique).")
def hint_command(check_id: str | None, level: int | None) -> None:
    """A hint for the first failing check, or for CHECK; again for the next level."""
    workspace = here()
    message = ""
    if check_id:
        known = {check.id: check for check in checks_up_to(len(kit.lessons()) - 1)}
        if check_id not in known:
            close = difflib.get_close_matches(check_id, known, n=3)
            raise WorkshopError(f"there is no check {check_id!r}" + (f"; did you mean {', '.join(close)}?" if close else "; `workshop check` lists them"))
        check = known[check_id]
    else:
        first = grade(workspace).first_failure()
        if first is None:
            click.echo("Every check passes: no hint needed. Move on with `workshop next`.")
            return
        check, message = first.check, first.message
    if level is not None and level > len(check.hints):
        raise WorkshopError(f"{check.id} has {len(check.hints)} hint levels; ask for --level 1 to {len(check.hints)}")
    shown = level or next_level(workspace.path, check.id, len(check.hints))
    click.echo(f"{check.id}: {check.title}")
    if message:
        click.echo(f"  failing: {message}")
    click.echo(f"Hint {shown} of {len(check.hints)}: {check.hints[shown - 1]}")
    if shown < len(check.hints):
        click.echo(f"(Still stuck? `workshop hint {check.id}` again for the next level.)")
