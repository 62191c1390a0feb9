"""Every git call the kit makes in a student's workspace goes through here.

Before anything is written, `own_repository` makes sure the workspace is the root of its own
repository: a workspace whose .git is gone, inside some other repository, must never commit there.
git's own failures (no repository, a read-only folder, a leftover lock, no name for commits)
become a `GitProblem`: one line saying what to do, which the commands show with exit status 2.
"""
from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

from grader.errors import WorkspaceProblem

# Used only for what the student has not set: commits must not fail on a new laptop.
FALLBACK_IDENTITY = {"user.name": "Workshop student", "user.email": "student@workshop.invalid"}
MARKERS = ("<<<<<<< ", ">>>>>>> ")


class GitProblem(WorkspaceProblem):
    """What went wrong with git, and what to do about it."""


def run(folder: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """`git ARGS` in `folder`; its output, or a GitProblem that says what to do."""
    command = ["git", *_identity(folder), "-c", "commit.gpgsign=false", *args]
    try:
        # A session of its own: a Ctrl-C in the terminal reaches the kit, which decides; git is never cut mid-write.
        done = subprocess.run(command, cwd=folder, capture_output=True, text=True, start_new_session=True,
                              env={**os.environ, **(env or {}), "GIT_TERMINAL_PROMPT": "0"})
    except FileNotFoundError:
        if not Path(folder).is_dir():
            raise GitProblem(f"{folder} does not exist (was it moved or deleted?)") from None
        raise GitProblem("git is not installed (or not on PATH); install it (https://git-scm.com/downloads) and try again") from None
    except NotADirectoryError:
        raise GitProblem(f"{folder} is not a folder") from None
    if done.returncode != 0:
        raise GitProblem(explain(folder, args, done.stderr))
    return done.stdout.strip()


def explain(folder: Path, args: tuple[str, ...], stderr: str) -> str:
    """git's error output as one line that says what to do."""
    text = " ".join(stderr.split())
    lowered = text.lower()
    if "index.lock" in text:
        return (f"git is busy in {folder}, or a git that crashed left {folder / '.git/index.lock'} behind; if no other git is "
                f"running there, delete that file (`rm .git/index.lock`) and run the command again")
    if "not a git repository" in lowered:
        return no_repository(folder)
    if "read-only file system" in lowered or "permission denied" in lowered or "insufficient permission" in lowered:
        return (f"{folder} cannot be written (git said: {_first(text)}); make it writable (`chmod -R u+w {folder}`) "
                f"or copy it somewhere you can write, and run the command again")
    if "tell me who you are" in lowered or "ident" in lowered and "name" in lowered:
        return ('git does not know who you are; run `git config --global user.name "Your Name"` and '
                '`git config --global user.email you@example.com`, then run the command again')
    return f"`git {args[0] if args else ''}` failed in {folder}: {_first(text) or 'no reason given'}"


def commit_command(folder: Path, message: str) -> str:
    """`git add -A && git commit -m MESSAGE`, naming an author when git has none (a new laptop), so it works as given."""
    flags = "".join(f"{shlex.quote(part)} " for part in _identity(folder))
    return f'git add -A && git {flags}commit -m "{message}"'


def abort_command(folder: Path) -> str | None:
    """The command that undoes a merge, rebase or cherry-pick the student started and left half-done."""
    for left, command in (("MERGE_HEAD", "git merge --abort"), ("CHERRY_PICK_HEAD", "git cherry-pick --abort"),
                          ("REVERT_HEAD", "git revert --abort"), ("rebase-merge", "git rebase --abort"),
                          ("rebase-apply", "git rebase --abort")):
        if (folder / ".git" / left).exists():
            return command
    return None


def no_repository(folder: Path) -> str:
    return (f"{folder} is not a git repository (its .git folder is missing), and the kit saves your work in git before "
            f"changing anything; make it one with `git init && {commit_command(folder, 'My work')}` in {folder}, "
            "then run the command again")


def own_repository(folder: Path) -> None:
    """Refuse (GitProblem) unless `folder` is the top of a git repository of its own."""
    if not folder.is_dir():
        raise GitProblem(f"{folder} is not a folder")
    try:
        top = run(folder, "rev-parse", "--show-toplevel")
    except GitProblem as problem:
        raise GitProblem(no_repository(folder)) if "not a git repository" in str(problem) or "missing" in str(problem) else problem
    if Path(top).resolve() != folder.resolve():
        raise GitProblem(
            f"{folder} has no git repository of its own (its .git folder is gone), so git would write into the one at "
            f"{top}; nothing was changed. Give the workspace its own: `git init && {commit_command(folder, 'My work')}` "
            f"in {folder}, then run the command again")


def save(folder: Path, message: str, only: str | None = None) -> bool:
    """Commit every change (new files too), or only those under `only`; True when a commit was made."""
    own_repository(folder)
    paths = ["--", only] if only else []
    run(folder, "add", "-A", *paths)
    if not run(folder, "status", "--porcelain", *paths):
        return False
    run(folder, "commit", "-q", "--no-verify", "-m", message, *paths)
    return True


def head(folder: Path) -> str:
    """The commit checked out, or "" in a repository with no commit yet."""
    try:
        return run(folder, "rev-parse", "-q", "--verify", "HEAD")
    except GitProblem:
        return ""


def conflicted(folder: Path) -> list[str]:
    """Files a merge left unresolved: unmerged in the index, or holding both kinds of conflict marker."""
    unmerged = set(run(folder, "diff", "--name-only", "--diff-filter=U").splitlines())
    for name in run(folder, "ls-files", "--cached", "--others", "--exclude-standard").splitlines():
        path = folder / name
        try:
            if path.is_file() and not path.is_symlink() and path.stat().st_size < 2_000_000 and _has_markers(path.read_bytes()):
                unmerged.add(name)
        except OSError:
            continue
    return sorted(unmerged)


def _has_markers(data: bytes) -> bool:
    lines = data.decode("utf-8", errors="replace").splitlines()
    return all(any(line.startswith(marker) for line in lines) for marker in MARKERS)


def _identity(folder: Path) -> list[str]:
    """`-c key=value` for each part of a commit identity git has not been given."""
    try:
        found = subprocess.run(["git", "config", "--get-regexp", r"^user\.(name|email)$"], cwd=folder,
                               capture_output=True, text=True).stdout
    except OSError:
        found = ""
    known = {line.split(" ", 1)[0] for line in found.splitlines() if " " in line.strip()}
    return [part for key, fallback in FALLBACK_IDENTITY.items() if key not in known for part in ("-c", f"{key}={fallback}")]


def _first(text: str) -> str:
    return text.removeprefix("fatal: ").removeprefix("error: ")[:240]
