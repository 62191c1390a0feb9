"""The few git operations the kit does in a student's workspace, all of them safe to repeat."""
from __future__ import annotations

import subprocess
from pathlib import Path

FALLBACK_IDENTITY = ["-c", "user.name=Workshop", "-c", "user.email=workshop@localhost"]


def run(folder: Path, *args: str) -> str:
    identity = [] if _has_identity(folder) else FALLBACK_IDENTITY
    done = subprocess.run(["git", *identity, *args], cwd=folder, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def save(folder: Path, message: str) -> bool:
    """Commit everything (new files too) if anything changed; True when a commit was made."""
    run(folder, "add", "-A")
    if not run(folder, "status", "--porcelain"):
        return False
    run(folder, "commit", "-q", "--no-verify", "-m", message)
    return True


def conflicted(folder: Path) -> list[str]:
    """Files a merge left with conflicts: unmerged in the index, or holding conflict markers."""
    unmerged = set(run(folder, "diff", "--name-only", "--diff-filter=U").splitlines())
    for name in run(folder, "diff", "--name-only").splitlines() + run(folder, "ls-files", "--others", "--exclude-standard").splitlines():
        path = folder / name
        if path.is_file() and "\n<<<<<<< " in "\n" + path.read_text(encoding="utf-8", errors="replace"):
            unmerged.add(name)
    return sorted(unmerged)


def _has_identity(folder: Path) -> bool:
    found = subprocess.run(["git", "config", "user.email"], cwd=folder, capture_output=True, text=True)
    return bool(found.stdout.strip())
