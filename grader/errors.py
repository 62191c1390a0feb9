"""The one error type commands raise for bad input: printed as a single line, exit status 2."""
from __future__ import annotations

import click


class WorkshopError(click.ClickException):
    exit_code = 2

    def show(self, file=None) -> None:
        click.echo(f"workshop: {self.format_message()}", err=True)
