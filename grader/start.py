"""`workshop start lesson-N [DIR]`: render a fresh workspace for a lesson."""
from __future__ import annotations

import shutil
import subprocess
import tempfile
import warnings
from pathlib import Path

import click

from grader import git, kit
from grader.errors import WorkshopError
from grader.template_repo import template_source

PRISTINE = shutil.ignore_patterns("__pycache__", ".pytest_cache", "*.pyc")


def start_workspace(lesson: int, target: Path, solved: bool = False) -> Path:
    """Render the template for `lesson` into `target`, add stash, and make the first commit."""
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise WorkshopError(f"{target} already exists and is not empty; pick a new folder, e.g. `workshop start lesson-{lesson} rover-{lesson}b`")
    try:
        render(lesson, target, solved)
        git.run(target, "init", "-q")
        git.save(target, f"Start lesson {lesson}{' (solved)' if solved else ''}")
    except (OSError, subprocess.CalledProcessError) as failure:
        detail = failure.stderr.strip() if isinstance(failure, subprocess.CalledProcessError) and failure.stderr else failure
        raise WorkshopError(f"could not make the workspace in {target}: {detail}") from None
    return target


def render(lesson: int, target: Path, solved: bool = False) -> Path:
    """The workspace files alone: the copier template for `lesson`, plus a pristine stash."""
    import copier  # only rendering needs it; `workshop check` never pays for the import

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # copier warns about a clone's uncommitted changes; they are meant
        copier.run_copy(str(template_source()), str(target), data={"lesson": lesson, "solved": solved},
                        defaults=True, quiet=True, overwrite=True, vcs_ref="HEAD")
    copy_stash(target)
    return target


def copy_stash(target: Path) -> None:
    """A pristine stash beside Rover: its working directory, and the repo the scenarios change."""
    shutil.rmtree(target / "stash", ignore_errors=True)
    shutil.copytree(kit.root() / "stash", target / "stash", ignore=PRISTINE)


def pristine_file(lesson: int, relative: str) -> bytes:
    """A file as `workshop start lesson-N` renders it: the stub of lesson N's tool, earlier tools solved."""
    with tempfile.TemporaryDirectory(prefix="workshop-render-") as scratch:
        return (render(lesson, Path(scratch) / "ws") / relative).read_bytes()


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
