"""Change a workspace all at once or not at all.

A command that rewrites a workspace (`next`, `solution --apply`, `reset`) works on a copy of it
in a private temporary folder; only when all of that succeeded does the result land in the
workspace, through git, with Ctrl-C held off for that one step. A failure, an exception or a
Ctrl-C before then leaves the workspace exactly as it was, and the temporary folder (copier's
clones included, since they are made inside it) is removed on every way out.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import threading
from pathlib import Path
from typing import Iterator

from grader.course import git
from grader.errors import WorkspaceProblem


@contextlib.contextmanager
def sigint_held() -> Iterator[None]:
    """Ctrl-C is ignored inside (a step that must not be cut in two); outside the main thread, nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def private_temp(prefix: str = "workshop-") -> Iterator[Path]:
    """A temporary folder that this process's temp files (and its children's) go into meanwhile; removed on the way out."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    saved = tempfile.tempdir, os.environ.get("TMPDIR")
    tempfile.tempdir, os.environ["TMPDIR"] = str(folder), str(folder)
    try:
        yield folder
    finally:
        with sigint_held():
            tempfile.tempdir = saved[0]
            if saved[1] is None:
                os.environ.pop("TMPDIR", None)
            else:
                os.environ["TMPDIR"] = saved[1]
            shutil.rmtree(folder, ignore_errors=True)


def preflight(workspace: Path) -> None:
    """Refuse, before anything is done, what would stop the change half-way: say what to do instead."""
    git.own_repository(workspace)
    lock = workspace / ".git" / "index.lock"
    if lock.exists():
        raise git.GitProblem(git.explain(workspace, ("status",), f"Unable to create '{lock}': File exists."))
    for folder in (workspace, workspace / ".git"):
        try:
            with tempfile.TemporaryFile(dir=folder):
                pass
        except OSError as problem:
            raise git.GitProblem(git.explain(workspace, ("add",), f"{problem.strerror}: {folder}")) from None
    conflicts = git.conflicted(workspace)
    if conflicts:
        abort = git.abort_command(workspace)  # the student's own merge: undone safely by git itself
        undo = f"undo your merge with `{abort}`" if abort else "undo the move that made it with `git reset --hard && git clean -fd`"
        raise WorkspaceProblem(
            f"resolve the conflict in {', '.join(conflicts)} first: keep what you want between the <<<<<<< and >>>>>>> "
            f"markers and delete the markers, then `{git.commit_command(workspace, 'Resolve')}`; or {undo}")


@contextlib.contextmanager
def transaction(workspace: Path) -> Iterator[Path]:
    """Yield a copy of `workspace` to change; if the block ends without an exception, the copy's state lands in it.

    What lands: the copy's commits, and its uncommitted changes as uncommitted changes.
    """
    preflight(workspace)
    with private_temp("workshop-change-") as scratch:
        before = _files(workspace)
        start = git.head(workspace)
        copy = scratch / workspace.name
        _copy(workspace, copy, before)
        yield copy
        _land(workspace, copy, before, start)


def _files(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file git would see (tracked, or untracked and not ignored): its size and modification time."""
    listing = git.run(folder, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    found = {}
    for name in filter(None, listing.split("\0")):
        with contextlib.suppress(OSError):
            stat = (folder / name).lstat()
            found[name] = (stat.st_size, stat.st_mtime_ns)
    return found


def _copy(workspace: Path, copy: Path, files: dict[str, tuple[int, int]]) -> None:
    try:
        shutil.copytree(workspace / ".git", copy / ".git", symlinks=True)
        for name in files:
            source, target = workspace / name, copy / name.rstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            if source.is_dir() and not source.is_symlink():  # a repository of its own inside (git lists it as a folder)
                shutil.copytree(source, target, symlinks=True)
            else:
                shutil.copy2(source, target, follow_symlinks=False)
    except OSError as problem:
        raise WorkspaceProblem(f"could not copy {workspace} to work on it ({problem.strerror or problem}: {problem.filename}); "
                               "nothing was changed") from None


def _land(workspace: Path, copy: Path, before: dict[str, tuple[int, int]], start: str) -> None:
    """The copy's HEAD and working tree become the workspace's, in git steps that Ctrl-C cannot cut."""
    done = git.head(copy)
    git.run(copy, "add", "-A")
    git.run(copy, "commit", "-q", "--no-verify", "--allow-empty", "-m", "workshop: uncommitted changes (temporary)")
    everything = git.head(copy)
    if _files(workspace) != before or git.head(workspace) != start:
        raise WorkspaceProblem(f"files in {workspace} changed while the command ran (an editor saving?); nothing was "
                               "changed by the kit: run the command again")
    with sigint_held():
        git.run(workspace, "fetch", "-q", "--no-tags", str(copy), "HEAD")
        try:
            git.run(workspace, "reset", "-q", "--hard", everything)
            _remove_gone(workspace, before, everything)
            git.run(workspace, "reset", "-q", done)  # what the command left uncommitted is uncommitted again
        except git.GitProblem as problem:
            raise WorkspaceProblem(f"{problem}; the kit could not finish, but nothing is lost: every file is in commit "
                                   f"{everything[:12]} (`git reset --hard {everything[:12]}` puts them all back)") from None


def _remove_gone(workspace: Path, before: dict[str, tuple[int, int]], everything: str) -> None:
    """Delete the files the command removed in the copy: `reset --hard` leaves a file the workspace never tracked."""
    kept = set(git.run(workspace, "ls-tree", "-r", "-z", "--name-only", everything).split("\0"))
    for name in before:
        if name.endswith("/") or name in kept:
            continue
        path = workspace / name
        with contextlib.suppress(OSError):
            path.unlink()
            for folder in path.parents:  # the folders the removal emptied go too, up to the workspace
                if folder == workspace or any(folder.iterdir()):
                    break
                folder.rmdir()
