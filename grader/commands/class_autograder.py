"""`workshop class autograder --lesson N -o autograder.zip`: a Gradescope autograder for one lesson."""
from __future__ import annotations

from pathlib import Path

import click

from grader.course import kit


@click.command("autograder")
@click.option("--lesson", required=True, type=click.IntRange(0, len(kit.lessons()) - 1), help="The lesson this assignment grades.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=Path("autograder.zip"),
              show_default=True, help="Where to write the zip to upload to Gradescope.")
@click.option("--unsafe-no-sandbox", "unsafe", is_flag=True,
              help="Where the autograder cannot run student code as its own unprivileged user, grade anyway (every result says so).")
def class_autograder_command(lesson: int, output: Path, unsafe: bool) -> None:
    """Build a Gradescope autograder zip (setup.sh, run_autograder, the kit as a wheel) for lesson N."""
    from grader.classroom.autograder import build
    from grader.errors import WorkshopError

    if not output.parent.is_dir():
        raise WorkshopError(f"cannot write {output}: folder {output.parent} does not exist")
    build(lesson, output, unsafe)
    click.echo(f"wrote {output}: upload it as the autograder of a Gradescope programming assignment for lesson-{lesson}")
    if unsafe:
        click.echo("workshop: this autograder grades WITHOUT a sandbox where it cannot switch to its student user, "
                   "and says so in every result", err=True)
