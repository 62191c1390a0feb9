"""How the kit says no: one line on stderr, exit status 2, never a traceback.

`WorkshopError` is what commands raise for bad input. `one_line_usage` turns click's own usage
errors (an unknown option, a missing argument), which click prints as four lines, into the same
one line, naming the command and where its help is; and a `WorkspaceProblem` (git trouble, a
conflict left to resolve) raised anywhere below a command into a WorkshopError.

The floor of the house: every package may import it, and it imports nothing of ours.
"""
from __future__ import annotations

import re
import sys
from contextlib import contextmanager
from typing import Iterator

import click


class WorkspaceProblem(Exception):
    """Something about the workspace stops a command: one line saying what, and what to do (exit status 2)."""


class WorkshopError(click.ClickException):
    exit_code = 2

    def show(self, file=None) -> None:
        said(f"workshop: {self.format_message()}")


def said(line: str) -> None:
    """`line` on stderr: whole for a program reading it, wrapped between words for a person at a terminal."""
    if not sys.stderr.isatty():
        click.echo(line, err=True)
        return
    import shutil
    import textwrap

    width = max(40, shutil.get_terminal_size().columns - 1)
    kept = re.sub(r"`[^`]*`", lambda command: command[0].replace(" ", "\u00a0"), line)  # a `command` is never split
    click.echo(textwrap.fill(kept, width, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False)
               .replace("\u00a0", " "), err=True)


class UsageLine(WorkshopError):
    def __init__(self, problem: click.UsageError):
        path = problem.ctx.command_path if problem.ctx else "workshop"
        message = " ".join(problem.format_message().split()).rstrip(".")
        super().__init__(f"{message} (`{path} --help` lists what it takes)")
        self.path = path

    def show(self, file=None) -> None:
        said(f"{self.path}: {self.format_message()}")


@contextmanager
def one_line_usage() -> Iterator[None]:
    try:
        yield
    except click.exceptions.NoArgsIsHelpError:
        raise  # `workshop` alone prints its help, as a help request should
    except click.UsageError as problem:
        raise UsageLine(problem) from None
    except WorkspaceProblem as problem:
        raise WorkshopError(str(problem)) from None
