"""One folder for every temp file a run makes, and a removal of it that cannot fail.

A `RunFolder` is made when a run starts and removed when it ends, however it ends. It is the
only place the student's side may write: its TMPDIR (tmp/), its HOME (home/), each worker's
cwd (scratch-N/) and each check's lab.tmp (check-N/, temp-N/).
"""
from __future__ import annotations

import itertools
import os
import stat
import tempfile
import time
from pathlib import Path

MAX_ANSWER = 32 << 20  # bytes of one answer line from a worker; the worker says so instead of sending more
CRASH_LOG = "crash.log"  # in each worker's scratch cwd: faulthandler's traceback of a hang or a crash
MARK = "WORKSHOP_RUN"  # the env var every process of the student's side carries (unless it scrubs it)
PREFIX = "workshop-check-"


class RunFolder:
    """mkdtemp(prefix="workshop-check-"): tmp/, home/, scratch-N/, check-N/, temp-N/."""

    def __init__(self) -> None:
        self.path = Path(tempfile.mkdtemp(prefix=PREFIX)).resolve()
        self.tmp, self.home = self.path / "tmp", self.path / "home"
        self.tmp.mkdir()
        self.home.mkdir()
        self.token = os.urandom(8).hex()
        self._numbers = itertools.count(1)  # next() on it is atomic: lanes make folders at once

    def folder(self, kind: str) -> Path:
        path = self.path / f"{kind}-{next(self._numbers)}"
        path.mkdir()
        return path

    def env(self) -> dict[str, str]:
        """What the student's side knows of the run: its mark, its temp folder and its home, all inside the folder."""
        tmp = str(self.tmp)
        return {MARK: self.token, "TMPDIR": tmp, "TEMP": tmp, "TMP": tmp, "HOME": str(self.home)}

    def close(self) -> None:
        remove_tree(self.path)
        if self.path.exists():  # a file written while the tree was removed (by a process on its way out): one more pass
            time.sleep(0.05)
            remove_tree(self.path)


def remove_tree(root: Path) -> None:
    """Remove `root` however deep or locked it is: iterative (no recursion limit), permissions restored first
    (chmod 000 folders, read-only files), never following a symlink out. Errors are swallowed, never raised."""
    root = Path(root)
    try:
        if root.is_symlink() or not root.is_dir():
            root.unlink(missing_ok=True)
            return
    except OSError:
        return
    stack, folders = [str(root)], []
    while stack:  # first pass: open every folder up and list it (depth-first, by hand)
        folder = stack.pop()
        folders.append(folder)
        _unlock(folder)
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                    else:
                        _quietly(os.unlink, entry.path)
        except OSError:
            pass
    for folder in reversed(folders):  # second pass: children before parents
        _quietly(os.rmdir, folder)


def _unlock(folder: str) -> None:
    try:
        mode = os.lstat(folder).st_mode
        if stat.S_IMODE(mode) & 0o700 != 0o700:
            os.chmod(folder, stat.S_IMODE(mode) | 0o700)
    except OSError:
        pass


def _quietly(action, path: str) -> None:
    try:
        action(path)
    except OSError:
        pass
