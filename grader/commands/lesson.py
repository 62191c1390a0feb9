"""`workshop lesson [N]`: the lesson text, rendered in the terminal, paged when longer than the screen."""
from __future__ import annotations

import os

import click

from grader.course import kit
from grader.errors import WorkshopError
from grader.course.workspace import NotAWorkspace, Workspace


@click.command("lesson")
@click.argument("lesson_id", required=False, metavar="[N]")
def lesson_command(lesson_id: str | None) -> None:
    """Read a lesson: this workspace's, or lesson N."""
    from rich.console import Console
    from rich.markdown import Markdown

    try:
        number = kit.parse_lesson_id(lesson_id) if lesson_id else Workspace.find().lesson
    except (kit.UnknownLesson, NotAWorkspace) as problem:
        raise WorkshopError(f"{problem}" if lesson_id else "not in a workspace: name a lesson, e.g. `workshop lesson 0`") from None
    console = Console()
    text = Markdown(kit.lesson(number).text.read_text(encoding="utf-8"))
    if console.is_terminal and len(console.render_lines(text)) > console.height:
        os.environ.setdefault("LESS", "-R")  # let less show rich's colours rather than escape codes
        with console.pager(styles=True):
            console.print(text)
    else:
        console.print(text)
