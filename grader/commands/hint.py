"""`workshop hint [CHECK] [--level K]`: one hint at a time, for the first failing check or a named one.

Each call without --level shows the next level for that check, like asking a teacher twice, as long as
the check fails for the same reason; a new fault starts again at level 1. What was shown is remembered
in .git/workshop-hints.json, out of the student's way.
"""
from __future__ import annotations

import difflib
import json
import re
from pathlib import Path

import click

from grader.course import kit
from grader.errors import WorkshopError
from grader.commands.screen import missing_file, missing_said, root_cause, say, source_line, traceback_command
from grader.grading.grade import checks_up_to, grade
from grader.grading.runner import run_checks
from grader.course.workspace import here


def _memory(workspace_path: Path) -> Path:
    return workspace_path / ".git" / "workshop-hints.json"


def fault_key(message: str) -> str:
    """What a failure is about, the same from run to run: its words without the numbers, quoted values and paths a
    check draws at random. A hint level belongs to one fault: a new fault in the same check starts again at level 1."""
    words = re.sub(r"'[^']*'|\"[^\"]*\"|\[[^\]]*\]|\S*/\S*|\d+", "#", message.lower())
    return " ".join(words.split())[:80]


def next_level(workspace_path: Path, check_id: str, count: int, fault: str = "") -> int:
    """The level to show now: one more than last time for the same fault, stopping at the last; 1 for a new fault."""
    memory = _memory(workspace_path)
    try:
        seen = json.loads(memory.read_text())
        seen = seen if isinstance(seen, dict) else {}
    except (OSError, ValueError):  # none yet, unreadable, or garbled: start from level 1
        seen = {}
    last = seen.get(check_id)
    if isinstance(last, int) and not isinstance(last, bool):  # remembered before faults were: the same fault
        last = {"level": last, "fault": fault}
    same = isinstance(last, dict) and last.get("fault") == fault and isinstance(last.get("level"), int)
    level = min(last["level"] + 1, count) if same else 1
    if memory.parent.is_dir():
        try:
            memory.write_text(json.dumps({**seen, check_id: {"level": level, "fault": fault}}))
        except OSError:  # a read-only workspace: the hint is still shown, only not remembered
            pass
    return max(level, 1)


@click.command("hint")
@click.argument("check_id", required=False, metavar="[CHECK]")
@click.option("--level", type=click.IntRange(min=1), help="Show this hint level (1 is a nudge, the last is the technique).")
def hint_command(check_id: str | None, level: int | None) -> None:
    """A hint for the first failing check, or for CHECK; again for the next level."""
    workspace = here()
    if check_id:
        check = _known(check_id)
        if check.lesson > workspace.lesson:
            say(f"{check.id} is a check of lesson {check.lesson}; this workspace is at lesson {workspace.lesson}, so it does not count yet.")
        outcome = run_checks(workspace.path, [check])[0]
        state = "passes now" if outcome.passed else f"fails now: {outcome.message}"
        fault = "" if outcome.passed else fault_key(outcome.message)
    else:
        result = grade(workspace)
        cause = root_cause(result)
        gone = missing_file(workspace.path, cause)
        if gone:  # the same cause `check` and `status` name, not the import error it leads to
            say(f"No hint can help yet: {missing_said(gone, workspace.path)} (no hint level was used).")
            return
        if cause:
            say(f"No hint can help yet: rover does not import, so the failing checks stop at: {cause}")
            code = source_line(cause, workspace.path)
            if code:
                click.echo(code)
            say(f"Fix that line first (no hint level was used); {traceback_command(cause)} shows the whole traceback.")
            return
        first = result.first_failure()
        if first is None:
            say("Every check passes: no hint needed." + (" Move on with `workshop next`." if workspace.lesson + 1 < len(kit.lessons()) else ""))
            return
        check, state, fault = first.check, f"fails now: {first.message}", fault_key(first.message)
    if level is not None and level > len(check.hints):
        raise WorkshopError(f"{check.id} has {len(check.hints)} hint levels; ask for --level 1 to {len(check.hints)}")
    shown = level or next_level(workspace.path, check.id, len(check.hints), fault)
    say(f"{check.id}: {check.title}")
    say(state, indent="  ")
    say(f"Hint {shown} of {len(check.hints)}: {check.hints[shown - 1]}")
    if shown < len(check.hints):
        say(f"(Still stuck? `workshop hint {check.id}` again for the next level.)")
    else:
        say("(That was the last hint. To see a working version: `workshop solution --force`.)")


def _known(check_id: str) -> kit.Check:
    known = {check.id: check for check in checks_up_to(len(kit.lessons()) - 1)}
    if check_id not in known:
        close = difflib.get_close_matches(check_id, known, n=3)
        raise WorkshopError(f"there is no check {check_id!r}" + (f"; did you mean {', '.join(close)}?" if close else "; `workshop check` lists them"))
    return known[check_id]
