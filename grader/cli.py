"""The `workshop` command: one click group, each command in a module of its own."""
from __future__ import annotations

import click

from grader.check import check_command
from grader.demo import demo_command
from grader.devcheck import dev_group
from grader.hint import hint_command
from grader.lesson_text import lesson_command
from grader.next import next_command
from grader.reset import reset_command
from grader.solution import solution_command
from grader.start import start_command
from grader.status import status_command
from grader.watch import watch_command


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="workshop-kit")
def main() -> None:
    """Build Rover, a coding agent, one tool per lesson."""


for command in (start_command, check_command, next_command, status_command, hint_command, lesson_command,
                watch_command, reset_command, solution_command, demo_command, dev_group):
    main.add_command(command)


if __name__ == "__main__":
    main()
