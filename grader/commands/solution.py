"""`workshop solution [--apply]`: the reference solution of the current lesson, to read or to use."""
from __future__ import annotations

import click

from grader.commands.screen import say
from grader.course import git, kit
from grader.course.transaction import transaction
from grader.errors import WorkshopError
from grader.grading.grade import grade
from grader.course.workspace import here


@click.command("solution")
@click.option("--apply", "apply_it", is_flag=True, help="Replace your file with the reference solution (yours stays in git).")
@click.option("--force", is_flag=True, help="Show the solution before the lesson passes.")
def solution_command(apply_it: bool, force: bool) -> None:
    """Show the reference solution once the lesson passes, or apply it to catch up."""
    workspace = here()
    lesson = kit.lesson(workspace.lesson)
    if apply_it:
        with transaction(workspace.path) as copy:
            git.save(copy, f"Lesson {lesson.number} work, saved before workshop solution --apply")
            (copy / lesson.file).parent.mkdir(parents=True, exist_ok=True)
            (copy / lesson.file).write_bytes(lesson.solution.read_bytes())
            git.save(copy, f"Apply the reference solution of lesson {lesson.number}")
        say(f"{lesson.file} is now the reference solution of lesson {lesson.number}. "
            f"Your version is in git: `git log -p -- {lesson.file}`. Next: `workshop check`, then `workshop next`.")
        return
    if not force and not grade(workspace, only=lesson.number).passed:
        raise WorkshopError(f"the solution opens once lesson-{lesson.number} passes `workshop check`; "
                            "try `workshop hint` first, or see it now with `workshop solution --force`")
    from rich.console import Console
    from rich.syntax import Syntax

    Console().print(Syntax(lesson.solution.read_text(encoding="utf-8"), "python", line_numbers=True,
                           word_wrap=True), f"\n(the reference solution for {lesson.file})")
