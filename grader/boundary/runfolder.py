"""One folder for every temp file a run makes, the one way evidence is read back from it, and a removal that cannot fail.

A `RunFolder` is made when a run starts and removed when it ends, however it ends. It is the
only place the student's side may write: its TMPDIR (tmp/, also its /tmp in bubblewrap), its
HOME (home/), its /dev/shm in bubblewrap (shm/), the replayed test runs (replay/:
grader.boundary.replay), each worker's cwd (scratch-N/) and each check's lab.tmp (check-N/, temp-N/).

Whatever the grader reads back from it that the side wrote (a worker's crash log) comes through `RunFolder.read`:
walked from the folder's pinned fd, no link followed at any step, regular files only (a FIFO or a device is refused,
never opened to block), at most a bounded number of bytes (grader.boundary.safe_files does the walking).
"""
from __future__ import annotations

import itertools
import os
import stat
import tempfile
import time
from pathlib import Path
from typing import Callable, TypeVar

from grader.boundary.folder_fds import DIRECTORY, open_unlocked, unlock
from grader.boundary.safe_files import Pinned, Refused
from grader.boundary import replay
from grader.boundary.backends.identity import hand_over

T = TypeVar("T")

MAX_ANSWER = 32 << 20  # bytes of one answer line from a worker; the worker says so instead of sending more
CRASH_LOG = "crash.log"  # in each worker's scratch cwd: faulthandler's traceback of a hang or a crash
MARK = "WORKSHOP_RUN"  # the env var every process of the student's side carries (unless it scrubs it)
PREFIX = "workshop-check-"
EVIDENCE = 1 << 20  # bytes of one file of the side's the grader reads back; a larger one is not read at all


class RunFolder:
    """mkdtemp(prefix="workshop-check-"): tmp/, home/, shm/ (the sandbox's /dev/shm), scratch-N/, check-N/, temp-N/."""

    def __init__(self, replayed: tuple[str, ...] = (), replays: dict[str, str] | None = None) -> None:
        """`replayed`: the arguments of a `python` test run that the side's runs on the same files share
        (replay.py); `replays`: records an earlier run of this process kept (`replays()`), to replay in this one too."""
        self.path = Path(tempfile.mkdtemp(prefix=PREFIX)).resolve()
        self.fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)  # pinned: walked, never followed
        self.tmp, self.home, self.shm = self.path / "tmp", self.path / "home", self.path / "shm"
        self.replay = self.path / replay.FOLDER if replayed else None
        try:
            hand_over(self.fd)  # a root grader's side has a host uid of its own: what the grader makes for it is that uid's
            for folder in (self.tmp, self.home, self.shm, self.replay):
                if folder:
                    self._made(folder)
            if self.replay:
                replay.install(self.replay, replayed, replays or {}, MARK)
        except BaseException:  # no uid free, a full disk: nothing of a run that never began is left behind
            os.close(self.fd)
            remove_tree(self.path)
            raise
        self.token = os.urandom(8).hex()
        self._numbers = itertools.count(1)  # next() on it is atomic: lanes make folders at once
        from grader.boundary.folder_caps import DiskWatch
        from grader.boundary.hidden_memory import MemoryWitness

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
        name = f"{kind}-{next(self._numbers)}"
        return Pinned.make(self.fd, name, self.path / name)

    def read(self, path: Path, limit: int = EVIDENCE) -> str:
        """What the side left at `path` (in this folder) as text, or '' if there is nothing the grader will read there:
        missing, a link anywhere on the way, not a regular file, or over `limit` bytes. Never blocks, never follows."""
        found = self.read_bytes(path, limit)
        return found.decode("utf-8", "replace") if found is not None else ""

    def read_bytes(self, path: Path, limit: int = EVIDENCE) -> bytes | None:
        """`read`'s bytes, as they are; None (not b'') if the grader will not read them."""
        return self._through_fd(lambda folder: folder.read_bytes(path, limit), None)

    def names(self, folder: str) -> list[str]:
        """The entries of one of its top-level folders, listed from the pinned fd ([] if it is not a folder there)."""
        return self._through_fd(lambda pinned: pinned.listdir(folder), [])

    def _through_fd(self, look: Callable[[Pinned], T], nothing: T) -> T:
        """`look` at the folder through a copy of its fd (so it is never closed under us), or `nothing` if it is
        closed, or if the look failed or was refused."""
        with self.disk.lock:
            if self.fd < 0:
                return nothing
            fd = os.dup(self.fd)
        pinned = Pinned(self.path, fd)
        try:
            return look(pinned)
        except (OSError, Refused):
            return nothing
        finally:
            pinned.close()

    def replays(self) -> dict[str, str]:
        """The side's whole test-run records, to install in this process's next run folder (replay.kept says which).
        The side wrote them: whatever goes wrong in reading them costs the records, never the run."""
        try:
            return replay.kept(self) if self.replay else {}
        except Exception:
            return {}

    def env(self) -> dict[str, str]:
        """What the student's side knows of the run: its mark, its temp folder, its home and the replaying `python`'s
        folder (grader.boundary.replay), all inside the folder."""
        tmp = str(self.tmp)
        return {MARK: self.token, "TMPDIR": tmp, "TEMP": tmp, "TMP": tmp, "HOME": str(self.home),
                **({replay.PATH: str(self.replay)} if self.replay else {})}

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
        top = os.open(root, DIRECTORY)
    except OSError:
        _quietly(os.unlink, str(root))  # a file, a link (removed, not followed), or nothing at all
        return
    try:
        unlock(top)
        numbers = itertools.count()
        pending, moved = _empty(top, top, numbers), []
        while pending:
            name = pending.pop()
            moved.append(name)
            try:
                fd = open_unlocked(top, name)
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
            handle = open_unlocked(fd, entry.name)  # a folder moved to another parent must be writable itself
            os.close(handle)
            os.rename(entry.name, fresh, src_dir_fd=fd, dst_dir_fd=top)
            moved.append(fresh)
        except OSError:
            pass
    return moved


def _quietly(action, path: str) -> None:
    try:
        action(path)
    except OSError:
        pass
