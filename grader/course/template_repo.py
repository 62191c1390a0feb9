"""The git repository copier renders workspaces from, the same on every machine.

`copier update` (behind `workshop next`) needs the template as a git repository in which the
commit a workspace was made from still exists. A pip-installed kit is a plain folder, and a
clone may have uncommitted edits, so the kit keeps its own small repository in the user's
cache: each `start` or `next` syncs the kit's template files into it and commits them.

Each version of the kit's files is a commit of its own, with no parent and a fixed author,
committer and date, so the same files give the same commit id in every cache on every laptop:
a workspace made anywhere names a commit this cache can make too. Every version keeps a branch
(`kit-<id>`), so workspaces made from an earlier kit can still be moved on.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

from grader.course import kit
from grader.errors import WorkspaceProblem

PARTS = ("copier.yml", "rover/template", "lessons", "solutions")  # everything a render reads
SETTINGS = ["-c", "commit.gpgsign=false", "-c", "core.autocrlf=false", "-c", "core.fileMode=false", "-c", "core.safecrlf=false"]
FIXED = {f"GIT_{who}_{what}": value for who in ("AUTHOR", "COMMITTER")
         for what, value in (("NAME", "workshop"), ("EMAIL", "workshop@localhost"), ("DATE", "2000-01-01T00:00:00+0000"))}
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
LEGACY = "kit-before-fixed-ids"  # the history an older kit built, kept so its workspaces still move on


def cache_root() -> Path:
    """The kit's cache folder: $WORKSHOP_CACHE, else the platform's cache folder for the kit."""
    if os.environ.get("WORKSHOP_CACHE"):
        return Path(os.environ["WORKSHOP_CACHE"])
    from platformdirs import user_cache_path  # copier depends on platformdirs already

    return user_cache_path("workshop")


def location() -> Path:
    return cache_root() / "template"


def template_source() -> Path:
    """The template repository, in step with the installed kit; returns its path.

    Renders copy from its commits, so only the sync itself needs the lock (several `workshop start`s at once).
    """
    repo = location()
    try:
        repo.parent.mkdir(parents=True, exist_ok=True)
        with open(repo.parent / "template.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            return _sync(repo)
    except OSError as problem:  # the kit's cache, not the workspace: say so, and where
        raise WorkspaceProblem(f"the kit's template cache {repo.parent} cannot be written ({problem.strerror or problem}: "
                               f"{problem.filename}); make it writable, or set WORKSHOP_CACHE to a folder you can write "
                               "(`export WORKSHOP_CACHE=~/.cache/workshop`), and run the command again") from None


def versions(repo: Path) -> list[str]:
    """The commit of every kit version this cache has seen, the current one first."""
    current = _git(repo, "rev-parse", "HEAD")
    branches = _git(repo, "for-each-ref", "--sort=-creatordate", "--format=%(objectname)", "refs/heads/kit-*").split()
    return [current] + [commit for commit in dict.fromkeys(branches) if commit != current]


def has_commit(repo: Path, ref: str) -> bool:
    """Whether `ref` (a workspace's `_commit`) names a commit of this repository."""
    return bool(ref) and not ref.startswith("-") and subprocess.run(
        ["git", "rev-parse", "-q", "--verify", f"{ref}^{{commit}}"], cwd=repo, capture_output=True).returncode == 0


def _sync(repo: Path) -> Path:
    for stale in ("index.lock", "HEAD.lock"):  # under template.lock no other kit is at work here: a crashed git's leftover
        (repo / ".git" / stale).unlink(missing_ok=True)
    if not (repo / ".git").is_dir():
        repo.mkdir(parents=True, exist_ok=True)
        _git(repo, "init", "-q")
    elif _git(repo, "rev-parse", "-q", "--verify", "HEAD", check=False) and not _git(repo, "branch", "--list", "kit-*"):
        _git(repo, "branch", "-f", LEGACY, "HEAD")  # an older kit's history: keep it reachable
    for entry in repo.iterdir():
        if entry.name != ".git":
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    for part in PARTS:
        source, target = kit.root() / part, repo / part
        if source.is_dir():
            shutil.copytree(source, target, ignore=SKIP)
        else:
            shutil.copy2(source, target)
    (repo / ".git" / "index").unlink(missing_ok=True)  # a fresh index: every file's mode is 100644, whatever the disk says
    _git(repo, "add", "-A")
    tree = _git(repo, "write-tree")
    commit = _git(repo, "commit-tree", tree, "-m", f"Kit template {tree[:12]}")
    if _git(repo, "rev-parse", "-q", "--verify", "HEAD", check=False) != commit:
        _git(repo, "branch", "-f", f"kit-{commit[:12]}", commit)
        _git(repo, "update-ref", "HEAD", commit)
    return repo


def _git(repo: Path, *args: str, check: bool = True) -> str:
    done = subprocess.run(["git", *SETTINGS, *args], cwd=repo, capture_output=True, text=True, env={**os.environ, **FIXED})
    if check and done.returncode != 0:
        reason = " ".join(done.stderr.split())[:240] or "no reason given"
        raise WorkspaceProblem(f"the kit's template cache {repo} is broken (`git {args[0]}` said: {reason}); delete that "
                               f"folder (`rm -rf {repo}`, the kit rebuilds it) and run the command again")
    return done.stdout.strip()
