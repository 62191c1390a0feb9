"""The grader's own reads and writes under a folder the student's code can also write, never following a link.

The student's side may plant a symlink anywhere in its run folder (a thread left behind at import can race the
grader): a read through it would hand the grader's view of /proc/self/environ or a classmate's file to a check's
message, a write through it would change a file outside the run folder. So every path here is walked from a
directory fd pinned when the grader made the folder, one component at a time (`O_NOFOLLOW | O_DIRECTORY`), the last
one opened with `O_NOFOLLOW` too, and anything that is not a plain file or folder is refused (`Refused`, with a clear
message).
"""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path, PurePath

from grader.boundary.backends.linux_proc import handle_path
from grader.boundary.folder_fds import DIRECTORY
from grader.boundary.backends.identity import hand_over, hand_over_entry

NO_LINK = os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)  # a planted FIFO must not block us
LINK = "{name} is a symlink: the tool must write a file, not a link"


class Refused(Exception):
    """The grader will not read or write this path (a link, a FIFO, a device, a folder where a file should be, too
    large): the boundary's own error, which the grading layer turns into the check's failure."""


def refuse(message: str):
    raise Refused(message)


class Pinned:
    """A folder the grader made, held by an fd taken when it was made: every path below it is walked from the fd."""

    def __init__(self, path: Path, fd: int):
        self.path, self.fd = Path(path), fd

    @classmethod
    def make(cls, parent: int, name: str, path: Path) -> Pinned:
        """mkdir `name` in the folder `parent` (an fd) and pin it; a link planted in its place is refused."""
        os.mkdir(name, 0o755, dir_fd=parent)
        pinned = cls(path, os.open(name, DIRECTORY, dir_fd=parent))
        hand_over(pinned.fd)  # what the grader makes for the side is the side's (grader.boundary.backends.identity)
        return pinned

    @classmethod
    def open(cls, path: Path) -> Pinned:
        return cls(path, os.open(path, DIRECTORY))

    @property
    def fd_path(self) -> str:
        """The folder as its pinned fd names it (Linux: /proc/self/fd/N), for a watcher that takes a path."""
        return handle_path(self.fd)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    # --- walking ------------------------------------------------------------------------------

    def relative(self, path: str | PurePath) -> tuple[str, ...]:
        """The components of `path` below this folder (a path under self.path, or a relative one)."""
        path = PurePath(path)
        if path.is_absolute():
            try:
                path = path.relative_to(self.path)
            except ValueError:
                refuse(f"{path} is outside the check's folder {self.path}")
        parts = tuple(part for part in path.parts if part not in ("", "."))
        if ".." in parts:
            refuse(f"{path} climbs out of the check's folder")
        return parts

    def parent(self, path: str | PurePath, make: bool = False) -> tuple[int, str]:
        """An fd of the folder holding `path` (the caller closes it) and the last component's name."""
        parts = self.relative(path)
        if not parts:
            return os.dup(self.fd), "."
        fd = os.dup(self.fd)
        try:
            for at, part in enumerate(parts[:-1]):
                if make:
                    try:
                        os.mkdir(part, 0o755, dir_fd=fd)
                        hand_over_entry(part, fd)
                    except FileExistsError:
                        pass
                current, fd = fd, -1
                fd = self._step(current, part, "/".join(parts[: at + 1]))  # closes `current`, whatever happens
        except BaseException:
            if fd >= 0:
                os.close(fd)
            raise
        return fd, parts[-1]

    def _step(self, fd: int, part: str, shown: str) -> int:
        try:
            child = os.open(part, DIRECTORY, dir_fd=fd)
        except OSError as failure:
            self._explain(fd, part, shown, failure)
        finally:
            os.close(fd)
        return child

    def _explain(self, fd: int, name: str, shown: str, failure: OSError):
        try:
            mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
        except OSError:
            raise failure from None
        if stat.S_ISLNK(mode):
            refuse(LINK.format(name=shown))
        if failure.errno in (errno.ENOTDIR, errno.ELOOP):
            refuse(f"{shown} is not a folder")
        raise failure

    # --- reading ------------------------------------------------------------------------------

    def read_bytes(self, path: str | PurePath, limit: int = 256 << 20) -> bytes:
        limit = max(0, limit)
        fd = self._open(path, os.O_RDONLY)
        try:
            with os.fdopen(fd, "rb", closefd=False) as stream:
                data = stream.read(limit + 1)
        finally:
            os.close(fd)
        if len(data) > limit:
            refuse(f"{self._shown(path)} holds over {limit >> 20} MB: more than the grader reads")
        return data

    def read_text(self, path: str | PurePath, encoding: str = "utf-8", errors: str = "strict") -> str:
        return self.read_bytes(path).decode(encoding, errors)

    def lstat(self, path: str | PurePath) -> os.stat_result:
        """The entry itself (a link is a link); FileNotFoundError if there is none."""
        fd, name = self.parent(path)
        try:
            return os.stat(name, dir_fd=fd, follow_symlinks=False)
        finally:
            os.close(fd)

    def stat(self, path: str | PurePath) -> os.stat_result:
        """A regular file's or folder's status; a link or anything else is refused."""
        found = self.lstat(path)
        if stat.S_ISLNK(found.st_mode):
            refuse(LINK.format(name=self._shown(path)))
        if not (stat.S_ISREG(found.st_mode) or stat.S_ISDIR(found.st_mode)):
            refuse(f"{self._shown(path)} is not a regular file")
        return found

    def exists(self, path: str | PurePath) -> bool:
        return self._kind(path) is not None

    def is_file(self, path: str | PurePath) -> bool:
        return self._kind(path) == stat.S_IFREG

    def is_dir(self, path: str | PurePath) -> bool:
        return self._kind(path) == stat.S_IFDIR

    def is_symlink(self, path: str | PurePath) -> bool:
        return self._kind(path) == stat.S_IFLNK

    def listdir(self, path: str | PurePath = ".") -> list[str]:
        fd, name = self.parent(path)
        if name != ".":
            fd = self._step(fd, name, self._shown(path))  # closes the parent's fd
        try:
            return sorted(os.listdir(fd))
        finally:
            os.close(fd)

    # --- writing ------------------------------------------------------------------------------

    def write_bytes(self, path: str | PurePath, data: bytes, mode: int = 0o644) -> Path:
        """A new file with this content: whatever stood there (a planted link included) is removed first, unfollowed."""
        fd, name = self.parent(path, make=True)
        try:
            try:
                os.unlink(name, dir_fd=fd)
            except FileNotFoundError:
                pass
            except IsADirectoryError:
                refuse(f"{self._shown(path)} is a folder, not a file")
            out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NO_LINK, mode, dir_fd=fd)
        finally:
            os.close(fd)
        try:
            os.set_blocking(out, True)
            hand_over(out)
            view = memoryview(data)
            while view:
                view = view[os.write(out, view):]
            os.fchmod(out, mode)
        finally:
            os.close(out)
        return self.path.joinpath(*self.relative(path))

    def write_text(self, path: str | PurePath, text: str, mode: int = 0o644) -> Path:
        return self.write_bytes(path, text.encode("utf-8"), mode)

    def mkdir(self, path: str | PurePath, exist_ok: bool = False) -> Path:
        fd, name = self.parent(path, make=True)
        try:
            os.mkdir(name, 0o755, dir_fd=fd)
            hand_over_entry(name, fd)
        except FileExistsError:
            if not (exist_ok and self.is_dir(path)):
                raise
        finally:
            os.close(fd)
        return self.path.joinpath(*self.relative(path))

    def symlink(self, target: str, path: str | PurePath) -> None:
        """The grader's own link (the checks that test how tools treat links): made in place, never through one."""
        fd, name = self.parent(path)
        try:
            os.symlink(target, name, dir_fd=fd)
            hand_over_entry(name, fd)
        finally:
            os.close(fd)

    def chmod(self, path: str | PurePath, mode: int) -> None:
        """Change a regular file's or folder's mode, never a link's target."""
        if hasattr(os, "O_PATH"):  # Linux: an O_PATH handle of the entry itself, its mode changed through its fd path
            fd, name = self.parent(path)
            try:
                handle = os.open(name, os.O_PATH | NO_LINK, dir_fd=fd)
            finally:
                os.close(fd)
            try:
                kind = stat.S_IFMT(os.fstat(handle).st_mode)
                if kind not in (stat.S_IFREG, stat.S_IFDIR):
                    refuse(LINK.format(name=self._shown(path)) if kind == stat.S_IFLNK else f"{self._shown(path)} is not a regular file")
                os.chmod(handle_path(handle), mode)
            finally:
                os.close(handle)
            return
        self.stat(path)
        fd, name = self.parent(path)
        try:
            os.chmod(name, mode, dir_fd=fd, follow_symlinks=False)
        finally:
            os.close(fd)

    def unlink(self, path: str | PurePath, missing_ok: bool = False) -> None:
        fd, name = self.parent(path)
        try:
            os.unlink(name, dir_fd=fd)
        except FileNotFoundError:
            if not missing_ok:
                raise
        finally:
            os.close(fd)

    def copy_in(self, source: Path, path: str | PurePath, skip: tuple[str, ...] = ()) -> Path:
        """Copy the grader's own folder `source` (trusted: the kit) to `path` here, written through no link."""
        target = self.relative(path)
        self.mkdir(path)
        for folder, dirs, files in os.walk(source):
            dirs[:] = sorted(name for name in dirs if name not in skip)
            below = Path(folder).relative_to(source).parts
            for name in dirs:
                self.mkdir(PurePath(*target, *below, name))
            for name in files:
                origin = Path(folder) / name
                if not origin.is_symlink():
                    self.write_bytes(PurePath(*target, *below, name), origin.read_bytes(), stat.S_IMODE(origin.stat().st_mode))
        return self.path.joinpath(*target)

    # --- helpers ------------------------------------------------------------------------------

    def _open(self, path: str | PurePath, flags: int) -> int:
        fd, name = self.parent(path)
        try:
            opened = os.open(name, flags | NO_LINK, dir_fd=fd)
        except OSError as failure:
            self._explain(fd, name, self._shown(path), failure)
        finally:
            os.close(fd)
        if not stat.S_ISREG(os.fstat(opened).st_mode):
            os.close(opened)
            refuse(f"{self._shown(path)} is not a regular file")
        return opened

    def _kind(self, path: str | PurePath) -> int | None:
        try:
            return stat.S_IFMT(self.lstat(path).st_mode)
        except (FileNotFoundError, NotADirectoryError):
            return None

    def _shown(self, path: str | PurePath) -> str:
        return "/".join(self.relative(path)) or "."
