"""`workshop class ...`: the instructor's commands, one module each, gathered into one group here."""
from __future__ import annotations

import click


@click.group("class")
def class_group() -> None:
    """For instructors: the class board and relay, grading many workspaces, autograders."""
