"""`workshop reset stash | TOOL | --all`: put things back as `workshop start` made them.

Nothing is lost: the workspace is committed before anything is replaced, so `git log` and
`git checkout` can bring any of it back.
"""
from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import click

from grader.course import git, kit
from grader.errors import WorkshopError
from grader.course.render import copy_stash, pristine_file, render
from grader.course.workspace import Workspace, here

GIVEN = {"ls": "rover/tools/ls.py"}


def tool_files(lesson: int) -> dict[str, str]:
    """Tool name to file, for the tools a workspace at `lesson` has (the loop is 'loop')."""
    return {**GIVEN, **{kit.lesson(number).tool: kit.lesson(number).file for number in range(lesson + 1)}}


def reset_tool(workspace: Workspace, name: str) -> str:
    files = tool_files(workspace.lesson)
    if name not in files:
        raise WorkshopError(f"there is no tool {name!r} in lesson-{workspace.lesson}; choose one of: stash, {', '.join(files)}")
    git.save(workspace.path, f"Saved before workshop reset {name}")
    (workspace.path / files[name]).write_bytes(pristine_file(workspace.lesson, files[name]))
    git.save(workspace.path, f"Reset {files[name]}")
    return files[name]


def reset_all(workspace: Workspace) -> None:
    git.save(workspace.path, "Saved before workshop reset --all")
    with tempfile.TemporaryDirectory(prefix="workshop-reset-") as scratch:
        fresh = render(workspace.lesson, Path(scratch) / "ws", workspace.solved)
        shutil.copytree(fresh, workspace.path, dirs_exist_ok=True, ignore=shutil.ignore_patterns("stash", ".copier-answers.yml"))
    copy_stash(workspace.path)
    git.save(workspace.path, f"Reset to the start of lesson {workspace.lesson}")


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
        git.save(workspace.path, "Saved before workshop reset stash")
        copy_stash(workspace.path)
        git.save(workspace.path, "Reset stash")
        click.echo("stash/ is pristine again (its earlier state is in git).")
        return
    label = "every file of the lesson, and stash," if everything else f"the {what} tool"
    if not yes and not (sys.stdin.isatty() and click.confirm(f"Reset {label} to how the lesson started? Your version stays in git", default=False)):
        raise WorkshopError(f"nothing reset; run `workshop reset {'--all' if everything else what} --yes` to reset without asking")
    if everything:
        reset_all(workspace)
        click.echo(f"Reset to the start of lesson {workspace.lesson}; `git log` has everything before.")
    else:
        click.echo(f"{reset_tool(workspace, what)} is back as the lesson started it; your version is in `git log -p`.")
