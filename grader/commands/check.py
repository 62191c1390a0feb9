"""`workshop check`: grade the workspace in the current directory (the screen itself is in screen.py)."""
from __future__ import annotations

import os
import signal
import sys
from datetime import datetime, timezone
from pathlib import Path

import click

from grader.classroom.report import share_with_class
from grader.commands.screen import show
from grader.errors import WorkshopError
from grader.grading import reports  # before any grading: student code run in-process cannot swap it (issue 17)
from grader.boundary.side import in_process_note
from grader.grading import replays
from grader.grading.grade import checks_up_to, dumps, grade, workspace_for, written_atomically


def _writable(ctx: click.Context, param: click.Parameter, path: Path | None) -> Path | None:
    """Refuse a report path that cannot be written before grading, not after (when the report would be lost)."""
    if path is not None and not path.parent.is_dir():
        raise WorkshopError(f"{param.opts[0]} {path}: the folder {path.parent} does not exist; "
                            f"make it first (`mkdir -p {path.parent}`) or write the report elsewhere")
    if path is not None and not os.access(path.parent, os.W_OK):
        raise WorkshopError(f"{param.opts[0]} {path}: the folder {path.parent} cannot be written; "
                            f"write the report somewhere you can write (e.g. `{param.opts[0]} /tmp/{path.name}`)")
    return path


@click.command("check")
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
@click.option("--junit", type=click.Path(dir_okay=False, path_type=Path), callback=_writable, help="Also write a JUnit XML report here.")
@click.option("--gradescope", type=click.Path(dir_okay=False, path_type=Path), callback=_writable, help="Also write a Gradescope results.json here.")
@click.option("--classroom", type=click.Path(dir_okay=False, path_type=Path), callback=_writable, help="Also write GitHub Classroom's autograding result here.")
@click.option("--lesson", metavar="N", help="Grade as lesson N, whatever the workspace's answers file says (bulk grading, autograders).")
@click.option("--all", "everything", is_flag=True, help="Show every check of every lesson, not only the current lesson's.")
def check_command(as_json: bool, junit: Path | None, gradescope: Path | None, classroom: Path | None, lesson: str | None,
                  everything: bool) -> None:
    """Grade this workspace: every check of every lesson so far."""
    workspace = workspace_for(lesson)
    started = datetime.now(timezone.utc)
    # the student's own look, not a grade that counts: replay the test runs the last check recorded (grading.replays)
    records = replays.load(workspace.path) if lesson is None and not (junit or gradescope or classroom) else None
    try:
        result = _grade_showing_progress(workspace, records) if not as_json else grade(workspace, replays=records)
    except KeyboardInterrupt:  # the runner has already stopped its workers and removed its files
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        click.echo("\nworkshop: interrupted; nothing was graded", err=True)  # a line of its own, not after the ^C
        sys.exit(130)
    note = in_process_note(result.sandbox)
    if note:  # on stderr, so it shows with --json too and the JSON stays whole
        click.echo(f"workshop: {note}", err=True)
    if records is not None:
        replays.save(workspace.path, records)
    share_with_class(result)  # if this workspace joined a class board: posted in the background, never waited for
    _reports(result, started, junit=junit, gradescope=gradescope, classroom=classroom)
    if as_json:
        click.echo(dumps(result))
    else:
        show(result, everything, workspace=workspace.path)
    sys.exit(0 if result.passed else 1)


def _grade_showing_progress(workspace, records: dict[str, str] | None):
    """On a terminal, a live line while grading (checks done of total, one running), gone before the screen is drawn.
    Pipes and CI get nothing extra."""
    from rich.console import Console
    from rich.live import Live

    from grader.commands.progress_line import ProgressLine

    console = Console(highlight=False)
    if not console.is_terminal or os.environ.get("CI"):
        return grade(workspace, replays=records)
    line = ProgressLine(len(checks_up_to(workspace.lesson)))
    with Live(line, console=console, transient=True, refresh_per_second=8):
        return grade(workspace, on_outcome=line.finished, on_start=line.started, replays=records)


def _reports(result, started: datetime, **paths: Path | None) -> None:
    """Each report asked for, written whole or not at all (a killed run leaves no file that claims a score)."""
    if not any(paths.values()):
        return
    writers = {"junit": lambda target: reports.write_junit(result, target, started),
               "gradescope": lambda target: reports.write_gradescope(result, target),
               "classroom": lambda target: reports.write_classroom(result, target)}
    for kind, path in paths.items():
        if path:
            with written_atomically(path) as partial:
                writers[kind](partial)
