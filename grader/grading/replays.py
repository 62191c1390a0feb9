"""The scenarios' test runs one `workshop check` recorded (grader.boundary.replay), kept for the student's next one.

A check of the last lesson runs stash's tests on four trees, about 0.7 CPU s each; a student checks again and again,
and for a tool that still works the trees, and so the runs, are the same. The records go in the kit's cache folder
($WORKSHOP_CACHE, else the platform's: replays/), a file per workspace: written here, by the grader, never by the
student's side (its sandbox cannot reach that folder), and read back whole or not at all, at most MAX_BYTES.

Only the student's own commands use them (a plain `workshop check`, `watch`): a grade that counts (bulk grading, the
autograder, a report for Gradescope or CI, `--lesson`) and the kit's tests run every test for real.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import tempfile
from pathlib import Path

from grader.course.template_repo import cache_root

MAX_BYTES = 8 << 20  # the records as JSON: text RunFolder.replays read (4 MB at most), escaped


def _file(workspace: Path) -> Path:
    name = hashlib.sha256(str(workspace.resolve()).encode()).hexdigest()[:32]
    return cache_root() / "replays" / f"{name}.json"


def load(workspace: Path) -> dict[str, str]:
    """The records the last check of this workspace kept; {} if there are none, or they are not what we wrote."""
    try:
        handle = os.open(_file(workspace), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return {}
    try:
        with os.fdopen(handle, "rb") as source:  # ours alone: a file another user put there (a shared cache) is not read
            mine = os.fstat(source.fileno())
            ours = stat.S_ISREG(mine.st_mode) and mine.st_uid == os.geteuid() and not mine.st_mode & 0o022
            data = source.read(MAX_BYTES + 1) if ours else b""
        found = json.loads(data) if data and len(data) <= MAX_BYTES else None
    except (OSError, ValueError):
        return {}
    if not isinstance(found, dict) or not all(isinstance(key, str) and isinstance(text, str) for key, text in found.items()):
        return {}
    return found


def save(workspace: Path, records: dict[str, str]) -> None:
    """Keep this check's records for the next (written whole, then moved in place); never fails a check."""
    target = _file(workspace)
    with contextlib.suppress(OSError, ValueError):
        if not records:
            target.unlink(missing_ok=True)
            return
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".replays-")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(records, out)
            os.replace(temporary, target)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
