"""One folder for every temp file a run makes, and a removal of it that cannot fail.

A `RunFolder` is made when a run starts and removed when it ends, however it ends. It is the
only place the student's side may write: its TMPDIR (tmp/, also its /tmp in bubblewrap), its
HOME (home/), its /dev/shm in bubblewrap (shm/), each worker's cwd (scratch-N/) and each check's
lab.tmp (check-N/, temp-N/).
"""
from __future__ import annotations

import itertools
import os
import stat
import tempfile
import time
from pathlib import Path

from grader.grading.backends.identity import hand_over
from grader.grading.backends.linux_proc import handle_path

MAX_ANSWER = 32 << 20  # bytes of one answer line from a worker; the worker says so instead of sending more
CRASH_LOG = "crash.log"  # in each worker's scratch cwd: faulthandler's traceback of a hang or a crash
MARK = "WORKSHOP_RUN"  # the env var every process of the student's side carries (unless it scrubs it)
PREFIX = "workshop-check-"


class RunFolder:
    """mkdtemp(prefix="workshop-check-"): tmp/, home/, shm/ (the sandbox's /dev/shm), scratch-N/, check-N/, temp-N/."""

    def __init__(self) -> None:
        self.path = Path(tempfile.mkdtemp(prefix=PREFIX)).resolve()
        self.fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)  # pinned: walked, never followed
        hand_over(self.fd)  # a root grader's side is 65534 on the host: what the grader makes for it is 65534's
        self.tmp, self.home, self.shm = self.path / "tmp", self.path / "home", self.path / "shm"
        for folder in (self.tmp, self.home, self.shm):
            self._made(folder)
        self.token = os.urandom(8).hex()
        self._numbers = itertools.count(1)  # next() on it is atomic: lanes make folders at once
        from grader.grading.folder_caps import DiskWatch
        from grader.grading.hidden_memory import MemoryWitness

        self.disk = DiskWatch(self)  # the caps on what it holds, shared by every clock of the run
        self.memory = MemoryWitness()  # the machine's memory as the run began: what no process holds is watched too

    def folder(self, kind: str) -> Path:
        return self._made(self.path / f"{kind}-{next(self._numbers)}")

    def _made(self, path: Path) -> Path:
        """A new folder of the side's, by its name in the pinned run folder (never through a link)."""
        os.mkdir(path.name, dir_fd=self.fd)
        fd = os.open(path.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=self.fd)
        try:
            hand_over(fd)
        finally:
            os.close(fd)
        return path

    def pinned(self, kind: str):
        """A new folder the grader will read and write itself (a check's lab.tmp, its temp): held by an fd taken as it
        was made, so nothing the student's side plants in the run folder (a link in its place) can redirect it."""
        from grader.grading.safe_files import Pinned

        name = f"{kind}-{next(self._numbers)}"
        return Pinned.make(self.fd, name, self.path / name)

    def env(self) -> dict[str, str]:
        """What the student's side knows of the run: its mark, its temp folder and its home, all inside the folder."""
        tmp = str(self.tmp)
        return {MARK: self.token, "TMPDIR": tmp, "TEMP": tmp, "TMP": tmp, "HOME": str(self.home)}

    def close(self) -> None:
        with self.disk.lock:  # never while a clock walks the folder from this fd
            if self.fd >= 0:
                os.close(self.fd)
                self.fd = -1
        remove_tree(self.path)
        if self.path.exists():  # a file written while the tree was removed (by a process on its way out): one more pass
            time.sleep(0.05)
            remove_tree(self.path)


def remove_tree(root: Path) -> None:
    """Remove `root` however deep or locked it is, never following a symlink out: every step is taken from a folder
    fd (unlinkat, renameat), so a link swapped in while we work is removed as a link. Iterative and never more than
    two folders deep: each subfolder is moved up to the top before it is emptied (no recursion, no fd per level).
    Permissions are restored first (chmod 000 folders). Errors are swallowed, never raised."""
    try:
        mode = os.lstat(root).st_mode
        if stat.S_ISDIR(mode) and stat.S_IMODE(mode) & 0o700 != 0o700:
            os.chmod(root, stat.S_IMODE(mode) | 0o700)
        top = os.open(root, _DIRECTORY)
    except OSError:
        _quietly(os.unlink, str(root))  # a file, a link (removed, not followed), or nothing at all
        return
    try:
        _unlock(top)
        numbers = itertools.count()
        pending, moved = _empty(top, top, numbers), []
        while pending:
            name = pending.pop()
            moved.append(name)
            try:
                fd = _open_unlocked(top, name)
            except OSError:
                continue
            try:
                pending += _empty(fd, top, numbers)
            finally:
                os.close(fd)
        for name in moved:
            _quietly(lambda entry: os.rmdir(entry, dir_fd=top), name)
    finally:
        os.close(top)
    _quietly(os.rmdir, str(root))


_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def _empty(fd: int, top: int, numbers) -> list[str]:
    """Unlink every non-folder in the folder `fd`; move each subfolder up into `top` under a fresh name; those names."""
    moved = []
    try:
        entries = list(os.scandir(fd))
    except OSError:
        return moved
    for entry in entries:
        try:
            folder = entry.is_dir(follow_symlinks=False)
        except OSError:
            folder = False
        if not folder:
            _quietly(lambda name: os.unlink(name, dir_fd=fd), entry.name)
            continue
        if fd == top:
            moved.append(entry.name)
            continue
        fresh = f".removing-{os.urandom(6).hex()}-{next(numbers)}"  # a name the student's side cannot have taken first
        try:
            handle = _open_unlocked(fd, entry.name)  # a folder moved to another parent must be writable itself
            os.close(handle)
            os.rename(entry.name, fresh, src_dir_fd=fd, dst_dir_fd=top)
            moved.append(fresh)
        except OSError:
            pass
    return moved


def _open_unlocked(parent: int, name: str) -> int:
    """Open the subfolder `name` (never a link), giving its owner full rights on it first."""
    if hasattr(os, "O_PATH"):
        handle = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
        try:
            if stat.S_ISDIR(os.fstat(handle).st_mode):
                _unlock(handle, handle_path(handle))
        finally:
            os.close(handle)
    else:
        try:
            mode = os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode
            if stat.S_ISDIR(mode) and stat.S_IMODE(mode) & 0o700 != 0o700:
                os.chmod(name, stat.S_IMODE(mode) | 0o700, dir_fd=parent, follow_symlinks=False)
        except (OSError, NotImplementedError):
            pass
    return os.open(name, _DIRECTORY, dir_fd=parent)


def _unlock(fd: int, through: str | int | None = None) -> None:
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_IMODE(mode) & 0o700 != 0o700:
            os.chmod(fd if through is None else through, stat.S_IMODE(mode) | 0o700)
    except OSError:
        pass


def _quietly(action, path: str) -> None:
    try:
        action(path)
    except OSError:
        pass
