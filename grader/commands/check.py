"""`workshop check`: grade the workspace in the current directory."""
from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path

import click

from grader.course import kit
from grader.grading.grade import Grade, dumps, grade
from grader.course.workspace import Workspace, here

FAILURES_SHOWN = 3
MARKS = {"passed": "[green]✓ passed[/]", "failed": "[red]✗ failed[/]", "error": "[red]✗ error[/]", "timeout": "[yellow]⧗ timeout[/]"}


@click.command("check")
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
@click.option("--junit", type=click.Path(dir_okay=False, path_type=Path), help="Also write a JUnit XML report here.")
@click.option("--gradescope", type=click.Path(dir_okay=False, path_type=Path), help="Also write a Gradescope results.json here.")
@click.option("--classroom", type=click.Path(dir_okay=False, path_type=Path), help="Also write GitHub Classroom's autograding result here.")
@click.option("--lesson", type=click.IntRange(0, len(kit.lessons()) - 1), help="Grade as lesson N, whatever the answers file says (autograders, CI).")
def check_command(as_json: bool, junit: Path | None, gradescope: Path | None, classroom: Path | None, lesson: int | None) -> None:
    """Grade this workspace: every check of every lesson so far."""
    started = datetime.now(timezone.utc)
    result = grade(here() if lesson is None else Workspace(here().path, lesson))
    if junit:
        from grader.grading.reports import write_junit

        write_junit(result, junit, started)
    if gradescope:
        from grader.grading.reports import write_gradescope

        write_gradescope(result, gradescope)
    if classroom:
        from grader.grading.reports import write_classroom

        write_classroom(result, classroom)
    if as_json:
        click.echo(dumps(result))
    else:
        show(result)
    sys.exit(0 if result.passed else 1)


def show(result: Grade) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False)
    table = Table(title=f"Lesson {result.lesson}: {kit.lesson(result.lesson).title}", title_justify="left", expand=True)
    table.add_column("lesson", justify="right", no_wrap=True)
    table.add_column("check", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("hint, or what it checks", ratio=1)
    for outcome in result.outcomes:
        detail = outcome.check.title if outcome.passed else f"[yellow]hint:[/] {_escape(outcome.check.hints[0])}"
        table.add_row(str(outcome.check.lesson), outcome.check.id, MARKS[outcome.status], detail)
    console.print(table)
    passed = sum(outcome.passed for outcome in result.outcomes)
    failures = [outcome for outcome in result.outcomes if not outcome.passed]
    for outcome in failures[:FAILURES_SHOWN]:
        console.print(f"[red]✗ {outcome.check.id}[/] ({outcome.check.title}):\n  {_escape(outcome.message)}")
    if len(failures) > FAILURES_SHOWN:
        console.print(f"[dim]  ... and {len(failures) - FAILURES_SHOWN} more failing checks above.[/]")
    if not failures:
        console.print(f"[green]All {passed} checks pass.[/] Score {result.score}/{result.max_score}. Ready for `workshop next`.")
    else:
        console.print(f"\n{passed}/{len(result.outcomes)} checks pass. Stuck? `workshop hint {failures[0].check.id}`")


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)
