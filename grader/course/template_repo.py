"""The git repository copier renders workspaces from.

`copier update` (behind `workshop next`) needs the template as a git repository in which the
commit a workspace was made from still exists. A pip-installed kit is a plain folder, and a
clone may have uncommitted edits, so the kit keeps its own small repository in the user's
cache: each `start` or `next` syncs the kit's template files into it and commits when they
changed. Old commits stay, so every workspace can be updated from the version it was made with.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

from grader.course import kit

PARTS = ("copier.yml", "rover/template", "lessons", "solutions")  # everything a render reads
IDENTITY = ["-c", "user.name=workshop", "-c", "user.email=workshop@localhost", "-c", "commit.gpgsign=false"]
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")


def location() -> Path:
    """$WORKSHOP_CACHE, else the platform's cache folder for the kit."""
    if os.environ.get("WORKSHOP_CACHE"):
        return Path(os.environ["WORKSHOP_CACHE"]) / "template"
    from platformdirs import user_cache_path  # copier depends on platformdirs already

    return user_cache_path("workshop") / "template"


def template_source() -> Path:
    """The template repository, in step with the installed kit; returns its path.

    Renders copy from its commits, so only the sync itself needs the lock (several `workshop start`s at once).
    """
    repo = location()
    repo.parent.mkdir(parents=True, exist_ok=True)
    with open(repo.parent / "template.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _sync(repo)


def _sync(repo: Path) -> Path:
    if not (repo / ".git").is_dir():
        repo.mkdir(parents=True, exist_ok=True)
        _git(repo, "init", "-q")
    for entry in repo.iterdir():
        if entry.name != ".git":
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    for part in PARTS:
        source, target = kit.root() / part, repo / part
        if source.is_dir():
            shutil.copytree(source, target, ignore=SKIP)
        else:
            shutil.copy2(source, target)
    _git(repo, "add", "-A")
    if _git(repo, "status", "--porcelain"):
        _git(repo, "commit", "-q", "-m", "Kit template, as installed")
    return repo


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *IDENTITY, *args], cwd=repo, capture_output=True, text=True, check=True)
    return done.stdout.strip()
