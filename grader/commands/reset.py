"""`workshop reset stash | TOOL | --all`: put things back as `workshop start` made them.

Nothing is lost: what is about to be replaced is committed first, so `git log` and `git checkout`
can bring it back; and only that is committed, so a reset of stash never sweeps the student's
unfinished tool code into a commit of its own.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import click

from grader.commands.screen import say
from grader.course import git, kit
from grader.errors import WorkshopError
from grader.course.render import copy_stash, pristine_file, render
from grader.course.transaction import transaction
from grader.course.workspace import Workspace, here

GIVEN = {"ls": "rover/tools/ls.py"}


def tool_files(lesson: int) -> dict[str, str]:
    """Tool name to file, for the tools a workspace at `lesson` has (the loop is 'loop')."""
    return {**GIVEN, **{kit.lesson(number).tool: kit.lesson(number).file for number in range(lesson + 1)}}


def tool_file(workspace: Workspace, name: str) -> str:
    """The file of tool `name`, or the one-line refusal naming the tools there are."""
    files = tool_files(workspace.lesson)
    if name not in files:
        raise WorkshopError(f"there is no tool {name!r} in lesson-{workspace.lesson}; choose one of: stash, {', '.join(files)}")
    return files[name]


def reset_tool(workspace: Workspace, name: str) -> str:
    file = tool_file(workspace, name)
    with transaction(workspace.path) as copy:
        click.echo(f"Rendering {file} as lesson {workspace.lesson} starts it…", err=True)
        pristine = pristine_file(workspace.lesson, file, copy.parent)
        git.save(copy, f"Saved before workshop reset {name}", only=file)
        (copy / file).parent.mkdir(parents=True, exist_ok=True)
        (copy / file).write_bytes(pristine)
        git.save(copy, f"Reset {file}", only=file)
    return file


def added_to_stash(folder: Path) -> list[str]:
    """The files in `folder`'s stash that `workshop start` did not put there (a test module the student wrote, say)."""
    pristine = kit.root() / "stash"
    return sorted(str(path.relative_to(folder)) for path in (folder / "stash").rglob("*")
                  if (path.is_file() or path.is_symlink()) and "__pycache__" not in path.parts and path.suffix != ".pyc"
                  and ".pytest_cache" not in path.parts and not (pristine / path.relative_to(folder / "stash")).exists())


def reset_stash(workspace: Workspace) -> tuple[list[str], str]:
    """Only stash is committed, before and after: the student's unfinished tool code stays uncommitted.

    Returns the files the student had added (now removed) and the commit that keeps them."""
    with transaction(workspace.path) as copy:
        git.save(copy, "Saved before workshop reset stash", only="stash")
        saved, added = git.head(copy), added_to_stash(copy)
        copy_stash(copy)
        git.save(copy, "Reset stash", only="stash")
    return added, saved


def removed_line(added: list[str], saved: str) -> str:
    """What a reset removed, and the one command that brings it back; "" when it removed nothing."""
    if not added:
        return ""
    shown = ", ".join(added[:5]) + (f" and {len(added) - 5} more" if len(added) > 5 else "")
    return (f"Removed what you had added: {shown}. It is kept in commit {saved[:12]}; to bring it back:\n"
            f"  git checkout {saved[:12]} -- {' '.join(added) if len(added) <= 5 else 'stash'}")


def tell_removed(added: list[str], saved: str) -> None:
    """The removal in words wrapped to the terminal, and the command that undoes it on a line of its own, whole."""
    if added:
        words, command = removed_line(added, saved).split("\n")
        say(words)
        click.echo(command)


def reset_all(workspace: Workspace) -> tuple[list[str], str]:
    """Every file the lesson starts with goes back; of the student's own files, only those added to stash go."""
    with transaction(workspace.path) as copy:
        click.echo(f"Rendering lesson {workspace.lesson} as it starts…", err=True)
        git.save(copy, "Saved before workshop reset --all")
        saved, added = git.head(copy), added_to_stash(copy)
        fresh = render(workspace.lesson, copy.parent / "fresh", workspace.solved)
        shutil.copytree(fresh, copy, dirs_exist_ok=True, ignore=shutil.ignore_patterns("stash", ".copier-answers.yml"))
        copy_stash(copy)
        git.save(copy, f"Reset to the start of lesson {workspace.lesson}")
    return added, saved


def can_ask() -> bool:
    """Whether there is a person at a terminal to answer a question."""
    return sys.stdin.isatty()


def ask(question: str) -> bool:
    """A y/N question wrapped between words; Ctrl-C is a Ctrl-C (exit 130, not click's "Aborted!"), end of input a no."""
    import shutil
    import textwrap

    width = max(40, shutil.get_terminal_size().columns - 1)
    click.echo(textwrap.fill(f"{question} [y/N]:", width, break_long_words=False, break_on_hyphens=False) + " ", nl=False)
    try:
        answer = input()
    except EOFError:
        click.echo()
        return False
    return answer.strip().lower() in ("y", "yes")


@click.command("reset")
@click.argument("what", required=False, metavar="stash|TOOL")
@click.option("--all", "everything", is_flag=True, help="Reset every file the lesson started with, and stash.")
@click.option("--yes", is_flag=True, help="Do not ask first.")
def reset_command(what: str | None, everything: bool, yes: bool) -> None:
    """Restore stash, or a tool file, as `workshop start` made it (your version stays in git)."""
    workspace = here()
    if everything == bool(what):
        raise WorkshopError("say what to reset: `workshop reset stash`, `workshop reset TOOL` (e.g. read), or `workshop reset --all`")
    if what == "stash":
        added, saved = reset_stash(workspace)
        say("stash/ is as `workshop start` made it again (its earlier state is in git: `git log -- stash`).")
        tell_removed(added, saved)
        return
    if what:
        tool_file(workspace, what)  # an unknown tool is refused before anything is asked
    label = "every file of the lesson, and stash," if everything else f"the {what} tool"
    again = f"`workshop reset {'--all' if everything else what} --yes`"
    if not yes and not can_ask():
        click.echo(f"Nothing reset: there is no terminal to ask in; {again} resets without asking.", err=True)
        sys.exit(1)
    if not yes and not ask(f"Reset {label} to how the lesson started? Your version stays in git"):
        click.echo(f"Nothing reset. ({again} resets without asking.)", err=True)
        sys.exit(1)
    if everything:
        added, saved = reset_all(workspace)
        say(f"Reset to the start of lesson {workspace.lesson}; `git log` has everything before.")
        tell_removed(added, saved)
    else:
        say(f"{reset_tool(workspace, what)} is back as the lesson started it; your version is in `git log -p`.")
