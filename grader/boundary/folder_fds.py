"""Folders opened by descriptor, never through a link: what the run folder's removal, its caps and the grader's own
reads share (each walks the folder the student's side can write from an fd, one component at a time)."""
from __future__ import annotations

import os
import stat

from grader.boundary.backends.linux_proc import handle_path

DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def open_unlocked(parent: int, name: str) -> int:
    """Open the subfolder `name` (never a link), giving its owner full rights on it first."""
    if hasattr(os, "O_PATH"):
        handle = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
        try:
            if stat.S_ISDIR(os.fstat(handle).st_mode):
                unlock(handle, handle_path(handle))
        finally:
            os.close(handle)
    else:
        try:
            mode = os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode
            if stat.S_ISDIR(mode) and stat.S_IMODE(mode) & 0o700 != 0o700:
                os.chmod(name, stat.S_IMODE(mode) | 0o700, dir_fd=parent, follow_symlinks=False)
        except (OSError, NotImplementedError):
            pass
    return os.open(name, DIRECTORY, dir_fd=parent)


def unlock(fd: int, through: str | int | None = None) -> None:
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_IMODE(mode) & 0o700 != 0o700:
            os.chmod(fd if through is None else through, stat.S_IMODE(mode) | 0o700)
    except OSError:
        pass
