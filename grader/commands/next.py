"""`workshop next`: move the workspace to the next lesson, keeping every change the student made.

copier update does a real 3-way merge: between the template as the workspace was made, the
template for the next lesson, and the workspace as it is. Tool files the student owns are
never replaced (`_skip_if_exists` in copier.yml), so finished tools stay theirs. The merge runs
in a copy of the workspace (grader.course.transaction): the move lands whole, or not at all.
"""
from __future__ import annotations

import sys
import warnings
from pathlib import Path

import click

from grader.commands.screen import missing_file, restore_command, say
from grader.course import git, kit
from grader.course.progress import remember
from grader.course.render import rebase_answers
from grader.course.conflicts import relabel
from grader.course.transaction import preflight, transaction
from grader.course.workspace import Workspace, here
from grader.errors import WorkshopError
from grader.grading.grade import grade


def move_on(workspace: Workspace, force: bool = False) -> list[str]:
    """Update `workspace` to the next lesson; returns the files left with conflicts (empty when clean)."""
    number = workspace.lesson + 1
    if number >= len(kit.lessons()):
        raise WorkshopError(f"lesson-{workspace.lesson} is the last lesson; there is no next one. `workshop status` shows your progress.")
    preflight(workspace.path)  # a conflict, a missing .git or a lock is said before a grade, not after
    gone = missing_file(workspace.path)
    if gone:  # never commit the deletion: the next lesson's merge would drop the file for good
        raise WorkshopError(f"{gone} is missing, and the next lesson needs it; bring it back with "
                            f"{restore_command(gone, workspace.path)}, then run `workshop next` again")
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
        remember(workspace.path, outcomes)  # every lesson so far passed: a failure later is a regression
    click.echo(f"Merging lesson {number} into a copy of your workspace (a few seconds)…", err=True)
    with transaction(workspace.path) as copy:
        rebase_answers(copy, workspace.lesson, workspace.solved, copy.parent)
        git.save(copy, f"Work on lesson {workspace.lesson} (saved by workshop next)")
        try:
            _update(copy, number)
        except Exception as failure:  # copier or git said no: the copy is dropped, the workspace never changed
            raise WorkshopError(f"could not move to lesson-{number} ({_first_line(failure)}); your workspace is as it was") from None
        conflicts = git.conflicted(copy)
        relabel(copy, conflicts, number)  # `yours` and `lesson N`, not copier's "before updating" / "after updating"
        if not conflicts:
            git.save(copy, f"Start lesson {number}")
    return conflicts


def _update(folder: Path, lesson: int) -> None:
    import copier

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        copier.run_update(str(folder), data={"lesson": lesson, "solved": False},
                          defaults=True, overwrite=True, quiet=True, vcs_ref="HEAD", conflict="inline")


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
            f"{', '.join(conflicts)}. Edit them (between `<<<<<<< yours` and `=======` is your version, down to "
            f"`>>>>>>> lesson {lesson.number}` the lesson's: keep what you want and delete the marker lines), then "
            f"`{git.commit_command(workspace.path, 'Resolve')}`; or undo the move with `git reset --hard && git clean -fd`.", err=True)
        sys.exit(1)
    say(f"Lesson {lesson.number}: {lesson.title}. Your work came along (see `git log`). "
        f"Next: `workshop lesson`, then `workshop check`.")
