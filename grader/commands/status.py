"""`workshop status`: where the student is in the course, lesson by lesson."""
from __future__ import annotations

import click

from grader.course.progress import remember
from grader.commands.screen import blocked, missing_file, next_step, root_cause
from grader.course import kit
from grader.grading.grade import grade
from grader.course.workspace import here


@click.command("status")
def status_command() -> None:
    """Progress across all lessons: done, current, to come."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    workspace = here()
    result = grade(workspace)
    stopped = {outcome.check.id for outcome in blocked(result)}  # these never ran: not regressed, waiting on one fix
    passed_before = remember(workspace.path, result.outcomes)
    table = Table(title=f"Rover workspace at {workspace.path}", title_justify="left")
    for column in ("lesson", "builds", "state", "checks"):
        table.add_column(column, no_wrap=column != "builds")
    for lesson in kit.lessons():
        mine = [outcome for outcome in result.outcomes if outcome.check.lesson == lesson.number]
        passed = sum(outcome.passed for outcome in mine)
        if lesson.number > workspace.lesson:
            state, checks = "[dim]to come[/]", f"[dim]{len(lesson.checks)} checks[/]"
        elif any(outcome.check.id in stopped for outcome in mine):
            state, checks = "[red]✗ not graded[/]", f"{passed}/{len(mine)}"
        else:
            done = passed == len(mine)
            state = ("[green]✓ done[/]" if done else "[yellow]in progress[/]") if lesson.number == workspace.lesson else (
                "[green]✓ done[/]" if done else "[red]regressed[/]" if lesson.number in passed_before else "[yellow]unfinished[/]")
            checks = f"{passed}/{len(mine)}"
        marker = "▶ " if lesson.number == workspace.lesson else "  "
        table.add_row(f"{marker}{lesson.id}", f"{lesson.title}", state, checks)
    console = Console(highlight=False)
    console.print(table)
    gone = missing_file(workspace.path, root_cause(result))
    if gone:
        console.print(f"[red]✗ {escape(gone)} is missing:[/] no check can run without it")
    elif stopped:
        console.print(f"[red]✗ rover does not import:[/] {escape(root_cause(result) or '')}")
    console.print(next_step(result, workspace=workspace.path))
