"""The `workshop` command: one click group, each command in a module of its own; Ctrl-C exits 130 (grader.ctrl_c)."""
import signal  # the very first lines: from here on a Ctrl-C is quiet (exit 130), even while the kit still loads
import sys


def _interrupted_while_starting(signum, frame) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    exec("")  # grader.ctrl_c.forget_interrupts, before it can be imported: else CPython may exit by SIGINT, not 130
    sys.stderr.write("\nworkshop: interrupted\n")
    raise SystemExit(130)


try:
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # an ignored Ctrl-C (nohup) stays ignored
        _interrupted_while_starting.before = signal.signal(signal.SIGINT, _interrupted_while_starting)  # grader.ctrl_c restores it
except ValueError:  # not the main thread (the kit imported by a test's thread): signals are not ours to set
    pass


def refuse_native_windows() -> None:
    """On native Windows, one line pointing at WSL2 or the dev container, and exit 2."""
    if sys.platform == "win32":
        print("workshop does not run on native Windows: run it inside WSL2 (`wsl --install`, then install the kit in "
              "Ubuntu), or open the workspace in its dev container (.devcontainer/) in VS Code or Codespaces.",
              file=sys.stderr)
        raise SystemExit(2)


refuse_native_windows()  # before importing anything that needs a POSIX system (fork, signals, fcntl)

from grader.ctrl_c import exits_quietly, forget_interrupts, ignore_ctrl_c, loaded, stop  # noqa: E402  first: from here on a Ctrl-C is quiet (exit 130)

import importlib  # noqa: E402

import click  # noqa: E402

from grader.errors import one_line_usage  # noqa: E402

loaded()  # the imports are in: a Ctrl-C is a KeyboardInterrupt again, which each command's exits_quietly catches

# Each command's module, imported only when that command runs (or `--help` lists them all): `workshop check`, run
# hundreds of times a class, does not load the classroom's, the demo's or the author's commands.
COMMANDS = {
    "start": "grader.commands.start:start_command",
    "check": "grader.commands.check:check_command",
    "next": "grader.commands.next:next_command",
    "status": "grader.commands.status:status_command",
    "hint": "grader.commands.hint:hint_command",
    "lesson": "grader.commands.lesson:lesson_command",
    "watch": "grader.commands.watch:watch_command",
    "reset": "grader.commands.reset:reset_command",
    "solution": "grader.commands.solution:solution_command",
    "demo": "grader.commands.demo:demo_command",
    "transcript": "grader.commands.transcript:transcript_command",
    "dev": "grader.commands.dev:dev_group",
    "class": "grader.commands.classroom:class_group",
    "join": "grader.commands.join:join_command",
    "leave": "grader.commands.join:leave_command",
}


class _Workshop(click.Group):
    """The group, with click's usage errors (in any subcommand) shown as one line."""

    def make_context(self, *args, **kwargs) -> click.Context:
        with exits_quietly(), one_line_usage():
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: click.Context):
        with exits_quietly(), one_line_usage():  # click itself would make a Ctrl-C "Aborted!" and exit 1
            return super().invoke(ctx)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module, attribute = COMMANDS[name].split(":")
        return getattr(importlib.import_module(module), attribute)


@click.group(cls=_Workshop, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="workshop-kit")
def main() -> None:
    """Build Rover, a coding agent, one tool per lesson."""


def run() -> None:
    """The `workshop` program. Once a command is over, a Ctrl-C changes nothing: Python's exit puts back the default
    SIGINT, which would kill it with no word while its work is already done (or already undone)."""
    try:
        main()
    except KeyboardInterrupt:  # one that got past every command's own handling (raised in click's cleanup, or in a
        stop()  # `finally` on the way out): Python would end the process by SIGINT (status -2), with no word
    finally:
        ignore_ctrl_c()
        forget_interrupts()  # a Ctrl-C a command caught and turned into its own exit stays that exit


if __name__ == "__main__":
    run()
