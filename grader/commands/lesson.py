"""`workshop lesson [N]`: the lesson text, rendered in the terminal, paged when longer than the screen.

Prose wraps at words; a code block's lines never wrap, so a command copied from the screen still runs: at the top
level a long line runs past the edge (the terminal shows the rest, and copies it whole); inside a list, where the
layout has no room to let it run, it is cut with a "…" at the edge."""
from __future__ import annotations

import os
import re

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
    source = kit.lesson(number).text.read_text(encoding="utf-8")
    text = _markdown(set(re.findall(r"`([^`\n]+)`", source)))(source)
    if console.is_terminal and len(console.render_lines(text)) > console.height:
        os.environ.setdefault("LESS", "-R")  # let less show rich's colours rather than escape codes
        with console.pager(styles=True):
            console.print(text, crop=False)
    else:
        console.print(text, crop=False)  # crop=False: a code line longer than the screen is printed whole


def _markdown(inline_code: set[str] = frozenset()):
    """rich's Markdown, with code blocks whose lines are never wrapped, and paragraphs wrapped between words but
    never inside a piece of `inline code` (a command split over two lines does not paste)."""
    from rich.markdown import CodeBlock, Markdown, Paragraph
    from rich.syntax import Syntax
    from rich.text import Text

    class KeptParagraph(Paragraph):
        def __rich_console__(self, console, options):
            for line in self.text.divide(_breaks(self.text.plain, options.max_width, inline_code)):
                line.rstrip()
                yield Text.assemble(line, no_wrap=True, overflow="ignore")

    class UnwrappedCode(CodeBlock):
        def __rich_console__(self, console, options):
            code = str(self.text).rstrip()
            nested = options.max_width < console.width  # in a list or a quote: rich crops there, so cut visibly
            highlighted = Syntax(code, self.lexer_name, theme=self.theme).highlight(code)
            highlighted.rstrip()
            for line in highlighted.split("\n", allow_blank=True):
                yield Text.assemble(" ", line, no_wrap=True, overflow="ellipsis" if nested else "ignore")

    class Lesson(Markdown):
        elements = {**Markdown.elements, "fence": UnwrappedCode, "code_block": UnwrappedCode, "paragraph_open": KeptParagraph}

    return Lesson


def _breaks(plain: str, width: int, kept: set[str]) -> list[int]:
    """Where the lines of a paragraph start: between words, never inside one of the `kept` pieces of text."""
    whole = [(found.start(), found.start() + len(piece)) for piece in kept if " " in piece
             for found in re.finditer(re.escape(piece), plain)]
    units: list[list[int]] = []
    for word in re.finditer(r"\S+", plain):
        start, end = word.span()
        if units and any(begin < start < stop for begin, stop in whole):
            units[-1][1] = end  # a break here would fall inside a kept piece: the same unit
        else:
            units.append([start, end])
    breaks, line_start = [], 0
    for start, end in units:
        if end - line_start > width and start > line_start:
            breaks.append(start)
            line_start = start
    return breaks
