"""The scenarios' test runs one `workshop check` recorded (grader.boundary.replay), kept for the student's next one.

A check of the last lesson runs stash's tests on four trees, about 0.7 CPU s each; a student checks again and again,
and for a tool that still works the trees, and so the runs, are the same. The records go in the kit's cache folder
($WORKSHOP_CACHE, else the platform's: replays/), a file per workspace: written here, by the grader, never by the
student's side (its sandbox cannot reach that folder), and read back whole or not at all, at most MAX_BYTES. The
folder must be this user's and no one else's to write; every step is taken from its fd and never follows a link, so
a cache folder shared by mistake cannot feed one user's records to another, or send a write elsewhere.

Only the student's own commands use them (a plain `workshop check`, `watch`): a grade that counts (bulk grading, the
autograder, a report for Gradescope or CI, `--lesson`) and the kit's tests run every test for real.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import stat
from pathlib import Path

from grader.course.template_repo import cache_root

MAX_BYTES = 8 << 20  # the records as JSON: text RunFolder.replays read (4 MB at most), escaped
FOLDER = "replays"
NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC


def _name(workspace: Path) -> str:
    return hashlib.sha256(str(workspace.resolve()).encode()).hexdigest()[:32] + ".json"


def _mine(found: os.stat_result) -> bool:
    """This user's, and no one else's to change."""
    return found.st_uid == os.geteuid() and not found.st_mode & 0o022


def _folder(make: bool) -> int | None:
    """The replays folder's fd, if it is a folder of this user's that others cannot write (made so when `make`)."""
    path = cache_root() / FOLDER
    if make:
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.mkdir(mode=0o700)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | NOFOLLOW)
    except OSError:
        return None
    if _mine(os.fstat(fd)):
        return fd
    os.close(fd)
    return None


def load(workspace: Path) -> dict[str, str]:
    """The records the last check of this workspace kept; {} if there are none, or they are not what we wrote."""
    folder = _folder(make=False)
    if folder is None:
        return {}
    try:
        handle = os.open(_name(workspace), os.O_RDONLY | os.O_NONBLOCK | NOFOLLOW, dir_fd=folder)
        try:
            found = os.fstat(handle)
            data = os.read(handle, MAX_BYTES + 1) if stat.S_ISREG(found.st_mode) and _mine(found) else b""
        finally:
            os.close(handle)
        records = json.loads(data) if 0 < len(data) <= MAX_BYTES else {}
        if isinstance(records, dict) and all(isinstance(key, str) and isinstance(text, str) for key, text in records.items()):
            "".join(records.values()).encode("utf-8")  # no lone surrogate: each is written back as UTF-8
            return records
    except Exception:  # missing, not ours, not JSON, too deep, not text: none are kept, and the tests run for real
        pass
    finally:
        os.close(folder)
    return {}


def save(workspace: Path, records: dict[str, str]) -> None:
    """Keep this check's records for the next (written whole, then moved in place); never fails a check."""
    data = json.dumps(records).encode("utf-8") if records else b""
    folder = _folder(make=bool(data))
    if folder is None:
        return
    name, temporary = _name(workspace), f".{secrets.token_hex(8)}.json"
    try:
        if not data or len(data) > MAX_BYTES:
            os.unlink(name, dir_fd=folder)
            return
        handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW, 0o600, dir_fd=folder)
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)
    except (OSError, ValueError):
        pass
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=folder)
        os.close(folder)
