"""`workshop class ...`: the instructor's commands, one module each, gathered into one group here."""
from __future__ import annotations

import click

from grader.commands.class_serve import serve_command
from grader.commands.class_autograder import class_autograder_command
from grader.commands.class_grade import class_grade_command
from grader.commands.class_students import students_group


@click.group("class")
def class_group() -> None:
    """For instructors: the class board and relay, grading many workspaces, autograders."""


class_group.add_command(serve_command)
class_group.add_command(class_grade_command)
class_group.add_command(class_autograder_command)
class_group.add_command(students_group)
