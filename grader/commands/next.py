"""`workshop next`: move the workspace to the next lesson, keeping every change the student made.

copier update does a real 3-way merge: between the template as the workspace was made, the
template for the next lesson, and the workspace as it is. Tool files the student owns are
never replaced (`_skip_if_exists` in copier.yml), so finished tools stay theirs.
"""
from __future__ import annotations

import sys
import warnings
from pathlib import Path

import click

from grader.commands.screen import say
from grader.course import git, kit
from grader.errors import WorkshopError
from grader.grading.grade import grade
from grader.course.template_repo import template_source
from grader.course.workspace import Workspace, here


def move_on(workspace: Workspace, force: bool = False) -> list[str]:
    """Update `workspace` to the next lesson; returns the files left with conflicts (empty when clean)."""
    if workspace.lesson + 1 >= len(kit.lessons()):
        raise WorkshopError(f"lesson-{workspace.lesson} is the last lesson; there is no next one. `workshop status` shows your progress.")
    if not force:
        click.echo(f"Grading lesson {workspace.lesson} before moving on…", err=True)
        outcomes = grade(workspace).outcomes
        failing = [outcome for outcome in outcomes if not outcome.passed and not outcome.busy]  # busy: the machine's, not the lesson's
        if not failing and any(outcome.busy for outcome in outcomes):
            raise WorkshopError("the machine was too busy to finish every check; run `workshop next` again in a moment")
        if failing:
            raise WorkshopError(
                f"lesson-{workspace.lesson} still has {len(failing)} failing check(s), the first being {failing[0].check.id}; "
                "finish them (`workshop check`, `workshop hint`) or move on anyway with `workshop next --force`"
            )
    git.save(workspace.path, f"Work on lesson {workspace.lesson} (saved by workshop next)")
    click.echo(f"Your work is committed; merging lesson {workspace.lesson + 1} into the workspace (a few seconds)…", err=True)
    try:
        _update(workspace.path, workspace.lesson + 1)
    except Exception as failure:  # copier or git said no: put the workspace back as it was saved
        git.run(workspace.path, "reset", "-q", "--hard")
        git.run(workspace.path, "clean", "-q", "-fd")
        raise WorkshopError(f"could not move to lesson-{workspace.lesson + 1} ({_first_line(failure)}); your workspace is as it was. "
                            "If the kit's cache was cleared, start the next lesson afresh with `workshop start`.") from None
    conflicts = git.conflicted(workspace.path)
    if not conflicts:
        git.save(workspace.path, f"Start lesson {workspace.lesson + 1}")
    return conflicts


def _update(folder: Path, lesson: int) -> None:
    import copier

    template_source()  # the kit may have been upgraded since: commit its files so copier sees them
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        copier.run_update(str(folder), data={"lesson": lesson, "solved": False}, defaults=True, overwrite=True,
                          quiet=True, vcs_ref="HEAD", conflict="inline")


def _first_line(failure: Exception) -> str:
    text = str(failure).strip() or type(failure).__name__
    return text.splitlines()[0][:200]


@click.command("next")
@click.option("--force", is_flag=True, help="Move on even though checks of this lesson still fail.")
def next_command(force: bool) -> None:
    """Move to the next lesson, keeping your work (a 3-way merge)."""
    workspace = here()
    conflicts = move_on(workspace, force)
    lesson = kit.lesson(workspace.lesson + 1)
    if conflicts:
        say(
            f"Moved to lesson {lesson.number}, but {len(conflicts)} file(s) mix your changes with the new lesson's and need you: "
            f"{', '.join(conflicts)}. Edit them (keep what you want between the <<<<<<< and >>>>>>> markers), then "
            "`git add -A && git commit`; or undo the move with `git reset --hard && git clean -fd`.", err=True)
        sys.exit(1)
    say(f"Lesson {lesson.number}: {lesson.title}. Your work came along (see `git log`). "
        f"Next: `workshop lesson`, then `workshop check`.")
