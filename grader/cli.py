"""The `workshop` command: one click group, each command in a module of its own."""
from __future__ import annotations

import click

from grader.check import check_command
from grader.devcheck import dev_group
from grader.start import start_command


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="workshop-kit")
def main() -> None:
    """Build Rover, a coding agent, one tool per lesson."""


main.add_command(start_command)
main.add_command(check_command)
main.add_command(dev_group)


if __name__ == "__main__":
    main()
