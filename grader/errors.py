"""How the kit says no: one line on stderr, exit status 2, never a traceback.

`WorkshopError` is what commands raise for bad input. `one_line_usage` turns click's own usage
errors (an unknown option, a missing argument), which click prints as four lines, into the same
one line, naming the command and where its help is; and a `WorkspaceProblem` (git trouble, a
conflict left to resolve) raised anywhere below a command into a WorkshopError.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import click

from grader.course.workspace import WorkspaceProblem


class WorkshopError(click.ClickException):
    exit_code = 2

    def show(self, file=None) -> None:
        click.echo(f"workshop: {self.format_message()}", err=True)


class UsageLine(WorkshopError):
    def __init__(self, problem: click.UsageError):
        path = problem.ctx.command_path if problem.ctx else "workshop"
        message = " ".join(problem.format_message().split()).rstrip(".")
        super().__init__(f"{message} (`{path} --help` lists what it takes)")
        self.path = path

    def show(self, file=None) -> None:
        click.echo(f"{self.path}: {self.format_message()}", err=True)


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
