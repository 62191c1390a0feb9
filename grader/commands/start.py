"""`workshop start lesson-N [DIR]`: render a fresh workspace for a lesson."""
from __future__ import annotations

import shutil
from pathlib import Path

import click

from grader.course import git, kit
from grader.course.render import render
from grader.course.workspace import NotAWorkspace, Workspace
from grader.errors import WorkshopError


def start_workspace(lesson: int, target: Path, solved: bool = False) -> Path:
    """Render the template for `lesson` into `target`, add stash, and make the first commit."""
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise WorkshopError(f"{target} already exists and is not empty; pick a new folder, e.g. `workshop start lesson-{lesson} rover-{lesson}b`")
    _refuse_inside_a_workspace(target, lesson)
    click.echo(f"Making the lesson-{lesson} workspace in {target}/…", err=True)
    made = not target.exists()
    try:
        render(lesson, target, solved)
        git.run(target, "init", "-q")
        git.save(target, f"Start lesson {lesson}{' (solved)' if solved else ''}")
    except BaseException as failure:  # a half-made workspace is no workspace: Ctrl-C or a failure takes it away again
        if made:
            shutil.rmtree(target, ignore_errors=True)
        if isinstance(failure, OSError):
            raise WorkshopError(f"could not make the workspace in {target}: {failure.strerror or failure}") from None
        raise
    return target


def _refuse_inside_a_workspace(target: Path, lesson: int) -> None:
    try:
        around = Workspace.find(target.absolute().parent)
    except NotAWorkspace:
        return
    outside = around.path.parent
    raise WorkshopError(f"{target} would be inside the workspace {around.path} (lesson {around.lesson}); make new workspaces "
                        f"beside it, not in it: `cd {outside} && workshop start lesson-{lesson}`")


@click.command("start")
@click.argument("lesson_id", metavar="lesson-N")
@click.argument("directory", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--solved", is_flag=True, help="Also solve this lesson (for instructor demos).")
def start_command(lesson_id: str, directory: Path | None, solved: bool) -> None:
    """Make a Rover workspace for a lesson: earlier lessons solved, this one to do."""
    try:
        number = kit.parse_lesson_id(lesson_id)
    except kit.UnknownLesson as problem:
        raise WorkshopError(str(problem)) from None
    target = start_workspace(number, directory or Path(f"rover-lesson-{number}"), solved)
    lesson = kit.lesson(number)
    click.echo(f"Lesson {number}: {lesson.title}. Your workspace is {target}/")
    click.echo(f"  cd {target}\n  workshop lesson      # read what to build\n  workshop check       # see how far you are")
