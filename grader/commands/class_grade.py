"""`workshop class grade DIR...`: grade a whole class at once, with a progress bar and reports."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from grader.course import kit
from grader.errors import WorkshopError
from grader.grading.grade import written_atomically

REPORT = click.Path(dir_okay=False, writable=True, path_type=Path)


@click.command("grade")
@click.argument("targets", nargs=-1, required=True, metavar="DIR...")
@click.option("--lesson", type=click.IntRange(0, len(kit.lessons()) - 1),
              help="Grade everyone as lesson N (the students' answers files are not trusted then).")
@click.option("--jobs", type=click.IntRange(min=1), help="Workspaces graded at once (default: one per core).")
@click.option("--csv", "csv_file", type=REPORT, help="Write one row per student, one column per check.")
@click.option("--html", "html_file", type=REPORT, help="Write an HTML report with the checks failing most.")
@click.option("--json", "json_file", type=REPORT, help="Write every student's grade as JSON.")
@click.option("--timeout", type=click.FloatRange(min=1), default=600, show_default=True,
              help="Seconds one student's grading may take before it is stopped.")
@click.option("--unsafe-no-sandbox", "unsafe", is_flag=True,
              help="Grade even where no sandbox can run: student code then has your rights (every report says so).")
def class_grade_command(targets: tuple[str, ...], lesson: int | None, jobs: int | None, csv_file: Path | None,
                        html_file: Path | None, json_file: Path | None, timeout: float, unsafe: bool) -> None:
    """Grade many workspaces: folders, folders of them, git repositories on disk, zips."""
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from grader.classroom import bulk, class_report, importer
    from grader.classroom.safe_text import for_terminal

    for report in (csv_file, html_file, json_file):
        if report and not report.parent.is_dir():
            raise WorkshopError(f"cannot write {report}: folder {report.parent} does not exist")
    importer.check_targets(list(targets))
    sandbox = bulk.boundary(unsafe)  # refused here, in one line, before anything is unpacked
    console = Console(stderr=True, highlight=False)
    if sandbox == bulk.UNSAFE:
        console.print(f"[bold red]workshop: grading WITHOUT a sandbox[/]: {sandbox}")
    with Progress(TextColumn("grading"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.description}"), console=console, transient=True) as progress:
        task = progress.add_task("", total=None)

        def collected(students: list[bulk.Student]) -> None:
            progress.update(task, total=sum(1 for student in students if student.path and not student.problem))

        def graded(student: bulk.Student) -> None:
            progress.update(task, advance=1, description=escape(for_terminal(student.name)[:40]))

        try:
            run = bulk.run_class(list(targets), lesson, jobs, graded, collected, unsafe, timeout)
        except KeyboardInterrupt:  # every grading process is gone already, and the run folder with them
            console.print("\nworkshop: stopped; no report written")  # a line of its own, not after the ^C
            sys.exit(130)
    _show(run, Console(highlight=False))  # the table on stdout, the progress and notes on stderr
    for report, write in ((csv_file, class_report.write_csv), (html_file, class_report.write_html), (json_file, class_report.write_json)):
        if report:
            with written_atomically(report) as partial:
                write(run, partial)
            console.print(f"wrote {report}")
    sys.exit(0 if all(student.passed for student in run.students) else 1)


def _show(run, console) -> None:
    from rich.markup import escape
    from rich.table import Table

    from grader.classroom.bulk import UNSAFE
    from grader.classroom.class_report import summary
    from grader.classroom.safe_text import for_terminal

    table = Table(title=f"{len(run.students)} entries graded in {run.seconds:.1f} s", title_justify="left")
    for column in ("student", "lesson", "score", "result"):
        table.add_column(column)
    for student in run.students:
        name = escape(for_terminal(student.name)) + (f" [dim]({escape(for_terminal(student.author))})[/]" if student.author else "")
        if student.graded:
            mark = "[green]✓[/]" if student.passed else "[red]✗[/]"
            table.add_row(name, str(student.lesson), f"{student.score}/{student.max_score}",
                          f"{mark} {escape(summary(student))}")
        else:
            table.add_row(name, "", "", f"[yellow]not graded:[/] {escape(for_terminal(student.problem))} "
                                        f"[dim]({escape(for_terminal(student.source))})[/]")
    console.print(table)
    if run.sandbox == UNSAFE:
        console.print(f"[bold red]Graded WITHOUT a sandbox[/]: {UNSAFE}")
    else:
        console.print(f"Each student graded in their own {run.sandbox} sandbox.")
