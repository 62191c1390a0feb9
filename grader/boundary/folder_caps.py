"""The run folder's size, watched from outside, so student code cannot fill the grader's disk.

Each file is bounded by RLIMIT_FSIZE (128 MiB), their sum is not: 200 processes could write 25 GiB. So every check's
clock (grader.boundary.clocks) asks `DiskWatch.over` at each look, every POLL seconds; past either cap the clock
kills its tree and the check fails, like the memory limit. The overshoot is what the code writes between two looks:
POLL plus the age of the figures (FRESH to STALE), 0.45-1.25 s, times the machine's write speed (no file passes
128 MiB, so that speed needs many files at once). With 24 writers at load 50-70 it was 4-74 MB past the cap.

The walk is the grader's own: from the run folder's pinned fd, folder by folder (openat with O_NOFOLLOW: a link is
counted as a link, never followed; a locked folder is unlocked first), iterative, with at most OPEN folder fds held
however deep, and capped: it stops as soon as the entries pass their cap, or its opens run out. Allocated blocks are
counted (a sparse file costs what it holds), a hard-linked file once. Files the code deleted but keeps open still
fill the disk: they are counted from the open fds of the tree being measured.
"""
from __future__ import annotations

import os
import threading
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from grader.boundary.backends.linux_proc import open_deleted
from grader.boundary.folder_fds import DIRECTORY, open_unlocked

BYTES = int(os.environ.get("WORKSHOP_RUN_FOLDER_BYTES", 512 << 20))  # what the run folder may hold, all files together
ENTRIES = 20_000  # files, folders and links in it (a solved lesson 8 peaks at a few hundred)
OPEN = 32  # folder fds a walk holds at once; a deeper folder with work left is reached again from the deepest one held
OPENS = 4 * ENTRIES  # opens one walk may spend (a maze both deep and wide): past them the folder is too big to measure
FRESH = 0.2  # seconds a walk's figures serve every clock at least (lanes poll at once; one walks, the others read its figures)
STALE = 1.0  # ... and at most: on a loaded machine a walk is slow, and its figures serve SPARE times its own length
FORGET = 60.0  # seconds after which a removed folder's name is dropped from the list (every walk since began later)
SPARE = 20  # so the walks take at most 1/SPARE of one core
HIDDEN = 2 << 30  # disk the folder's file system may lose during a run beyond what the walks find (see DiskWatch.hidden)
NEARLY_FULL = 0.1  # ... once its free space is under this share of it (or under HIDDEN)
NAMES = {"check": "the check's folder", "temp": "its TMPDIR", "tmp": "its TMPDIR", "home": "its HOME", "shm": "its /dev/shm",
         "scratch": "its working folder", "replay": "the replayed test runs' folder"}


@dataclass
class Size:
    """What the run folder holds: bytes and entries in all, and under each of its top-level entries."""

    bytes: int = 0
    entries: int = 0
    complete: bool = True  # False: the walk stopped early (too many entries, or a maze it could not finish)
    by_bytes: Counter = field(default_factory=Counter)
    by_entries: Counter = field(default_factory=Counter)
    began: float = 0.0  # time.monotonic() as the walk began


class DiskWatch:
    """The caps on one run folder, shared by every clock of the run (one walk serves them all for FRESH seconds)."""

    def __init__(self, folder, bytes_cap: int = BYTES, entries_cap: int = ENTRIES):
        self.folder, self.path, self.bytes_cap, self.entries_cap = folder, str(folder.path), bytes_cap, entries_cap
        self.lock = threading.Lock()  # held by a walk: the run folder's fd is not closed under one
        self._claims = threading.Lock()
        self._size, self._at, self._serves = Size(), -STALE, FRESH
        self._claimed: Counter = Counter()  # top-level names a running check's clock answers for
        self._gone: dict[str, float] = {}  # top-level names the grader removed, and when: a walk begun before is stale
        self._free = _free(self.path)  # the file system's free bytes as the run began

    def size(self, fresh: bool = False) -> Size:
        """The latest figures; a fresh walk if they are stale and no other clock is walking (never wait for one).
        `fresh`: figures from a walk begun since this call, after any walk under way (a last look, when the code's part
        is over): lanes that finish at once share one."""
        asked = time.monotonic()
        stale = asked - self._at >= self._serves
        if (fresh and self.lock.acquire()) or (stale and self.lock.acquire(blocking=False)):
            try:
                if fresh and self._size.began >= asked:  # another clock walked while this one waited for the lock
                    return self._size
                started = time.monotonic()
                fd = self.folder.fd  # -1 once the run folder is closed: nothing left to measure
                walked = measure(fd, self.entries_cap) if fd >= 0 else Size()
                walked.began = started
                self._size, self._at = walked, time.monotonic()
                with self._claims:  # a removal long before this walk began matters to no figures still in use
                    self._gone = {name: when for name, when in self._gone.items() if when >= started - FORGET}
                self._serves = min(STALE, max(FRESH, SPARE * (self._at - started)))
            finally:
                self.lock.release()
        return self._size

    @contextmanager
    def claim(self, names):
        """While a check runs, the folders it answers for: another check's clock leaves their overflow to it."""
        names = [Path(name).name for name in names]
        with self._claims:
            self._claimed.update(names)
        try:
            yield
        finally:
            with self._claims:
                self._claimed.subtract(names)

    def gone(self, name: str) -> None:
        """The top-level folder `name` was removed: figures from a walk that still saw it count it no more."""
        with self._claims:
            self._gone[name] = time.monotonic()

    def over(self, procs: list, mine=frozenset(), fresh: bool = False) -> tuple[str, bool] | None:
        """None while the folder is within its caps; else (what was exceeded, shared) if the clock that owns `mine`
        (top-level names) and measures `procs` must stop its code: the folder that holds the most is one of its own,
        or no running check's (`shared`: HOME, TMPDIR, a file at the top; the whole run must stop)."""
        size = self._present(self.size(fresh))
        deleted = sum(open_deleted([proc.pid for proc in procs], self.path).values())
        if size.complete and size.entries <= self.entries_cap and size.bytes + deleted <= self.bytes_cap:
            return None
        by = size.by_bytes if size.bytes + deleted > self.bytes_cap else size.by_entries
        heaviest = max(by, key=by.__getitem__, default="")
        if deleted > by.get(heaviest, 0):
            heaviest = next(iter(mine), "")  # this tree's deleted files, still open: this clock's to stop
        with self._claims:
            shared = self._claimed.get(heaviest, 0) <= 0
        if heaviest not in mine and not shared:
            return None  # another check's folder: its own clock stops it
        if heaviest not in mine and not fresh:  # figures may predate a failed check's folders, removed since: look again
            return self.over(procs, mine, fresh=True)
        return self._say(size, deleted, heaviest, own=heaviest in mine), shared and heaviest not in mine

    def _present(self, size: Size) -> Size:
        """The figures without the folders removed since the walk that made them began. Only those: a walk begun after
        a removal counts what it finds under that name (the code may make the folder again, or write in it as it goes)."""
        with self._claims:
            stale = [name for name, when in self._gone.items()
                     if when >= size.began and (name in size.by_bytes or name in size.by_entries)]
        if not stale:
            return size
        by_bytes, by_entries = size.by_bytes.copy(), size.by_entries.copy()
        for name in stale:
            by_bytes.pop(name, None)
            by_entries.pop(name, None)
        return Size(size.bytes - sum(size.by_bytes[name] for name in stale),
                    size.entries - sum(size.by_entries[name] for name in stale), size.complete, by_bytes, by_entries,
                    size.began)

    def hidden(self) -> str | None:
        """None, unless the file system lost more than HIDDEN bytes since the run began beyond what the run folder holds
        (files the walk cannot see, deleted but still held: an fd passed through a socket, a mapping; or another
        program's writes) and is nearly full. The whole run stops, as an error rather than a failure: whose they are is
        not known. Nearly full only: another program writing gigabytes (a download, a classmate's grading, the kit's
        own tests in parallel) must not stop a run on a disk with room to spare; the harm is a full disk."""
        found = _statvfs(self.path)
        if found is None or self._free is None:
            return None
        free = found.f_bavail * found.f_frsize
        lost = self._free - free - self._size.bytes
        if lost <= HIDDEN or free > max(HIDDEN, NEARLY_FULL * found.f_blocks * found.f_frsize):
            return None
        return (f"the disk holding the run folder lost {lost / (1 << 20):,.0f} MB during the run beyond the run folder's own "
                f"files (allowed: {HIDDEN >> 20:,} MB): files deleted but still held where the grader cannot count them, "
                "or another program filling the disk; the run was stopped")

    def _say(self, size: Size, deleted: int, heaviest: str, own: bool = True) -> str:
        where = NAMES.get(heaviest.split("-")[0], f"{heaviest!r} in the run folder") if heaviest else "the run folder"
        if heaviest and not own and heaviest.split("-")[0] in ("scratch", "check", "temp"):  # another worker's, idle
            where = f"{heaviest!r}, a folder no running check answers for (code wrote outside its own folders)"
        if size.bytes + deleted > self.bytes_cap:
            what = (f"the code's files came to {(size.bytes + deleted) / (1 << 20):,.0f} MB"
                    + (" (deleted ones it still holds open included)" if deleted else "")
                    + f", over the {self.bytes_cap / (1 << 20):,.0f} MB its folders may hold together")
        elif size.entries > self.entries_cap:
            what = f"the code made over {self.entries_cap:,} files and folders, more than its folders may hold"
        else:
            what = "the code made a maze of folders too deep and wide to measure"
        return f"{what}; most in {where}. Its processes were stopped: does it write in a loop, or keep files it no longer needs?"


def _statvfs(path: str) -> os.statvfs_result | None:
    try:
        return os.statvfs(path)
    except OSError:
        return None


def _free(path: str) -> int | None:
    found = _statvfs(path)
    return None if found is None else found.f_bavail * found.f_frsize


@dataclass
class _Frame:
    fd: int  # -1: closed (deep), reached again from the deepest held fd when it has work left
    name: str
    top: str  # the run folder's top-level entry this folder is under
    todo: list[str]


def measure(top_fd: int, entries_cap: int = ENTRIES) -> Size:
    """Walk the folder `top_fd` (never following a link) and count what it holds; stop past `entries_cap` entries."""
    size, seen, opens = Size(), set(), [OPENS]
    try:
        root = os.open(".", DIRECTORY, dir_fd=top_fd)
    except OSError:
        return size
    stack = [_Frame(root, "", "", _scan(root, "", size, seen, entries_cap))]
    try:
        while stack and size.complete:
            frame = stack[-1]
            if not frame.todo:
                stack.pop()
                if frame.fd >= 0:
                    os.close(frame.fd)
                continue
            if frame.fd < 0:
                frame.fd = _reopen(stack, opens)
                if frame.fd < 0:
                    size.complete = opens[0] > 0  # out of opens: too big to measure; else the folder just went
                    frame.todo = []
                    continue
            name = frame.todo.pop()
            opens[0] -= 1
            try:
                child = _open(frame.fd, name)
            except OSError:
                continue
            top = frame.top or name
            if len(stack) >= OPEN:  # a deep parent: let go of its fd; reached again only if it still has work
                os.close(frame.fd)
                frame.fd = -1
            stack.append(_Frame(child, name, top, _scan(child, top, size, seen, entries_cap)))
            size.complete = size.complete and opens[0] > 0
    finally:
        for frame in stack:
            if frame.fd >= 0:
                os.close(frame.fd)
    return size


def _scan(fd: int, top: str, size: Size, seen: set, entries_cap: int) -> list[str]:
    """Count the entries of one folder into `size`; the names of its subfolders. A folder or a link is one entry (the
    entry cap bounds what they cost); a file's allocated blocks are its size, read without following a link."""
    folders = []
    try:
        with os.scandir(fd) as entries:
            for entry in entries:
                owner = top or entry.name
                size.entries += 1
                size.by_entries[owner] += 1
                if size.entries > entries_cap:
                    size.complete = False
                    return []
                try:
                    if entry.is_dir(follow_symlinks=False):  # from the folder's own listing: no system call
                        folders.append(entry.name)
                        continue
                    if entry.is_symlink():
                        continue
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                blocks = info.st_blocks * 512
                if info.st_nlink > 1:  # a hard link: its file counts once
                    blocks = 0 if (info.st_dev, info.st_ino) in seen else blocks
                    seen.add((info.st_dev, info.st_ino))
                size.bytes += blocks
                size.by_bytes[owner] += blocks
    except OSError:
        pass
    return folders


def _open(parent: int, name: str) -> int:
    """The subfolder `name` (never a link); a locked one (chmod 000) is unlocked for its owner first."""
    try:
        return os.open(name, DIRECTORY, dir_fd=parent)
    except PermissionError:
        return open_unlocked(parent, name)


def _reopen(stack: list[_Frame], opens: list[int]) -> int:
    """An fd for the top frame's folder, opened name by name from the deepest frame still holding one (-1: gone)."""
    held = max(number for number, frame in enumerate(stack) if frame.fd >= 0)
    fd, own = stack[held].fd, False
    for frame in stack[held + 1:]:
        opens[0] -= 1
        try:
            deeper = _open(fd, frame.name) if opens[0] > 0 else -1
        except OSError:
            deeper = -1
        if own:
            os.close(fd)
        if deeper < 0:
            return -1
        fd, own = deeper, True
    return fd
