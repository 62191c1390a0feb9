"""Door 4, submissions in: finding each student's workspace among the paths the instructor gave, following no link.

A target is a workspace, a folder of them, a git repository on disk (a bare one, or a `file://` URL; cloned into
the run folder) or a zip (unpacked there, its entries counted from its central directory first). Nothing a student
made is followed: a link (a folder that is a link to a classmate's, a link inside a repository, an `alternates` file
that borrows a classmate's objects, a `commondir` naming their repository) is never a way to their work: git never
touches a submission's repository, only a private copy of the parts a repository needs (see `_private_copy`), and
every git command is bounded in time (its whole process group killed) and a checkout in size, each a row, not a
crash. Each row is named by what the instructor gave (the folder, the zip's or the URL's name); a repository's last
commit author is kept beside it, since anyone can write it.
"""
from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from grader.classroom.safe_text import clean, clean_message
from grader.classroom.student_run import COPY_BYTES, COPY_FILES, LEFT_OUT
from grader.classroom.zips import Unpackable, unpack
from grader.course.workspace import ANSWERS
from grader.errors import WorkshopError

REPOSITORY_ENTRIES = 200_000  # files and folders of a repository's git folder copied before it is cloned
REPOSITORY_BYTES = 500 << 20  # bytes of a repository's git folder copied before it is cloned
CHECKOUT_BYTES, CHECKOUT_FILES = COPY_BYTES, COPY_FILES  # what a clone may check out (measured from its tree first)
GIT_SECONDS = 120.0  # any one git command on a submission; then its whole process group is killed
BORROWING = ("commondir", "gitdir", "objects/info/alternates", "objects/info/http-alternates")  # each names another repo
NOT_A_WORKSPACE = f"not a Rover workspace (no {ANSWERS}; a workspace is made by `workshop start`)"


@dataclass
class Submission:
    """One row to be: its name (the instructor's), where it came from, the workspace found or why there is none."""
    name: str
    source: str
    path: Path | None = None
    author: str = ""  # a repository's last commit author: the student's to write, so shown, never the row's name
    problem: str = ""


def check_targets(targets: list[str]) -> None:
    """One error line (exit 2) for a target that is mistyped or cannot be graded at all, before anything runs."""
    for target in targets:
        if target.split(":", 1)[0] in ("http", "https", "ssh", "git") or target.startswith("git@"):
            raise WorkshopError(f"{target}: only repositories on disk are graded (a path or a file:// URL); clone it first")
        if target.startswith("file:"):
            parsed = urlparse(target)
            if parsed.netloc not in ("", "localhost") or not Path(unquote(parsed.path)).is_dir():
                raise WorkshopError(f"{target}: not a repository on this machine; "
                                    f"a file:// URL names a folder, as in file:///home/me/class/alice.git")
            continue
        path = Path(target)
        if not os.path.lexists(path):
            raise WorkshopError(f"{target}: no such file or folder")
        if path.is_symlink():
            continue  # a row of its own says why it is not followed
        if not os.access(path, os.R_OK | (os.X_OK if path.is_dir() else 0)):
            raise WorkshopError(f"{target}: cannot be read (permission denied)")
        if path.is_file() and not zipfile.is_zipfile(path):
            raise WorkshopError(f"{target}: not a folder or a zip; give a workspace, a folder of them, a zip or a repository")


def find_all(targets: list[str], scratch: Path) -> list[Submission]:
    """Every submission among `targets`, in order; clones and zips are unpacked under `scratch`."""
    return [found for target in targets for found in _expand(target, scratch)]


def _expand(target: str, scratch: Path) -> list[Submission]:
    path = Path(target)
    if target.startswith("file:"):
        return [_clone(target, Path(unquote(urlparse(target).path)), scratch)]
    if path.is_symlink():
        return [Submission(_name_of(path), clean(target), problem=f"a symbolic link (to {clean(os.readlink(path))}): "
                                                                    "links are not followed; name what it points to")]
    if path.is_dir() and _is_bare_repo(path):
        return [_clone(target, path, scratch)]
    if path.is_file():
        return [_unzip(path, scratch)]
    if path.is_dir() and _is_file(path / ANSWERS):
        return [Submission(_name_of(path), clean(target), path)]
    if path.is_dir():
        entries = sorted(entry for entry in path.iterdir() if not entry.name.startswith(".")
                         and (entry.is_symlink() or entry.is_dir() or entry.suffix == ".zip"))
        if entries:
            return [found for entry in entries for found in _expand(str(entry), scratch)]
    return [_find_inside(path, _name_of(path), clean(target))]


def _find_inside(folder: Path, name: str, source: str, author: str = "") -> Submission:
    """A submission's folder that is a workspace, or holds one one or two folders down (a zip's top folder, say),
    found without following a link."""
    if _is_file(folder / ANSWERS):
        return Submission(name, source, folder, author)
    found = [here for here in _folders(folder, depth=2) if _is_file(here / ANSWERS)]
    if len(found) == 1:
        return Submission(name, source, found[0], author)
    if len(found) > 1:
        return Submission(name, source, author=author, problem=f"holds {len(found)} workspaces; name each one instead")
    return Submission(name, source, author=author, problem=NOT_A_WORKSPACE)


def _folders(top: Path, depth: int) -> list[Path]:
    """`top` and the real folders (never a link to one) under it, `depth` levels down, in order; caches left out."""
    found, level = [top], [top]
    for _ in range(depth):
        below = []
        for folder in level:
            try:
                with os.scandir(folder) as entries:
                    below += sorted(Path(entry.path) for entry in entries
                                    if entry.is_dir(follow_symlinks=False) and entry.name not in LEFT_OUT)
            except OSError:
                continue
        found, level = found + below, below
    return found


def _is_file(path: Path) -> bool:
    """A regular file itself, not a link to one."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _clone(target: str, folder: Path, scratch: Path) -> Submission:
    """A repository on disk, cloned in three steps, each bounded: its git folder copied through an allow-list into a
    private folder (the grader owns the copy, so git's "dubious ownership" check passes and nothing in it names
    another folder), a clone of that copy without checkout, then a checkout only if its files fit the limits."""
    name = _stem(target)
    if folder.is_symlink():
        return Submission(name, clean(target), problem="it is a symbolic link: links are not followed")
    work = Path(tempfile.mkdtemp(prefix="clone-", dir=scratch))
    try:
        _private_copy(folder, work / "copy.git")
        there = work / "repository"
        _git(work, "clone", "--quiet", "--no-local", "--no-checkout", "--no-recurse-submodules", "--",
             str(work / "copy.git"), str(there), why="could not clone")
        author = ""
        if _git(there, "rev-parse", "--verify", "--quiet", "HEAD^{tree}", check=False).returncode == 0:
            _fits(there)
            _git(there, "checkout", "--quiet", "--force", "HEAD", why="could not check out")
            author = clean(_git(there, "log", "-1", "--format=%an").stdout.decode("utf-8", "replace").strip())
    except Refused as why:
        return Submission(name, clean(target), problem=clean_message(str(why)))
    finally:
        shutil.rmtree(work / "copy.git", ignore_errors=True)
    return _find_inside(there, name, clean(target), author)


class Refused(Exception):
    """Why a repository is not cloned or not checked out: one line for the student's row."""


def _private_copy(folder: Path, copy: Path) -> None:
    """The git folder of the repository `folder` (itself when bare, else its `.git`) copied to `copy` through an
    allow-list: HEAD, packed-refs, shallow, refs/ and objects/, regular files and folders only, bounded in entries and
    bytes.
    Whatever names another repository (a `.git` file, commondir, gitdir, alternates) or is not a regular file or
    folder (a link, a FIFO, a socket, a device) refuses the repository; every other entry (config, hooks, info/grafts,
    worktrees, modules, logs, ...) is left behind. Files are opened without following links and without blocking."""
    git = folder / ".git"
    if os.path.lexists(git) and not (git.is_dir() and not git.is_symlink()):
        raise Refused("its .git is a file or a link to another repository's: not followed")
    git = git if os.path.lexists(git) else folder
    for borrowing in BORROWING:
        if os.path.lexists(git / borrowing):
            raise Refused(f"its repository borrows from another ({borrowing}): not cloned")
    budget = {"entries": 0, "bytes": 0}
    copy.mkdir(mode=0o700)
    for entry in ("HEAD", "packed-refs", "shallow", "refs", "objects"):
        _copy_entry(git, entry, copy, budget)
    if not (copy / "HEAD").is_file():
        raise Refused("not a git repository (no HEAD)")
    for needed in ("refs", "objects"):
        (copy / needed).mkdir(exist_ok=True)


def _copy_entry(git: Path, relative: str, copy: Path, budget: dict[str, int]) -> None:
    source = git / relative
    try:
        mode = os.lstat(source).st_mode
    except FileNotFoundError:
        return
    except OSError as problem:
        raise Refused(f"its repository cannot be read ({relative}: {problem.strerror})") from None
    budget["entries"] += 1
    if budget["entries"] > REPOSITORY_ENTRIES:
        raise Refused(f"its git folder holds more than {REPOSITORY_ENTRIES:,} entries; repack it (git gc) first")
    if stat.S_ISLNK(mode):
        raise Refused(f"its repository holds a symbolic link ({relative}): links are not followed")
    if stat.S_ISDIR(mode):
        (copy / relative).mkdir(mode=0o700)
        try:
            names = sorted(os.listdir(source))
        except OSError as problem:
            raise Refused(f"its repository cannot be read ({relative}: {problem.strerror})") from None
        for name in names:
            _copy_entry(git, f"{relative}/{name}", copy, budget)
        return
    if not stat.S_ISREG(mode):
        raise Refused(f"its repository holds {relative}, which is not a regular file or folder (a FIFO, a socket "
                      f"or a device): not cloned")
    try:
        descriptor = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as problem:
        raise Refused(f"its repository cannot be read ({relative}: {problem.strerror})") from None
    with open(descriptor, "rb") as reading, open(copy / relative, "xb") as writing:
        if not stat.S_ISREG(os.fstat(reading.fileno()).st_mode):  # swapped for something else since the lstat
            raise Refused(f"its repository holds {relative}, which is not a regular file: not cloned")
        while chunk := reading.read(1 << 20):
            budget["bytes"] += len(chunk)
            if budget["bytes"] > REPOSITORY_BYTES:
                raise Refused(f"its git folder holds more than {REPOSITORY_BYTES >> 20} MB; not cloned")
            writing.write(chunk)


def _fits(there: Path) -> None:
    """The checkout of HEAD, measured from the tree before a file is written: at most CHECKOUT_FILES files and
    CHECKOUT_BYTES bytes (a 192 KB repository naming one 50 MB blob 20 times would check out 1 GB)."""
    listing = _git(there, "ls-tree", "-r", "-z", "--long", "HEAD").stdout
    files = size = 0
    for line in filter(None, listing.split(b"\0")):
        files += 1
        object_size = line.split(b"\t", 1)[0].split()[-1]
        size += int(object_size) if object_size.isdigit() else 0
    if size > CHECKOUT_BYTES:
        raise Refused(f"the repository's files would take {-(-size // (1 << 20)):,} MB, "
                      f"more than the {CHECKOUT_BYTES >> 20} MB limit")
    if files > CHECKOUT_FILES:
        raise Refused(f"the repository holds {files:,} files, more than the {CHECKOUT_FILES:,} limit")


def _git(where: Path, *args: str, why: str = "git failed", check: bool = True) -> subprocess.CompletedProcess:
    """git, with no system or global configuration, no hooks, no protocol but local files, no prompt; in a session of
    its own, killed with everything it started after GIT_SECONDS (Refused then, or when `check` and it failed)."""
    done = run_bounded(["git", "-c", "core.hooksPath=/dev/null", "-c", "protocol.allow=never",
                        "-c", "protocol.file.allow=always", "-c", "core.fsmonitor=false", *args],
                       where, GIT_SECONDS, _git_environment())
    if done is None:
        raise Refused(f"git took longer than {GIT_SECONDS:g} s")
    if check and done.returncode != 0:
        last = (done.stderr.decode("utf-8", "replace").strip().splitlines() or [why])[-1]
        raise Refused(f"{why}: {last}")
    return done


def _git_environment() -> dict[str, str]:
    """Ours without any GIT_* variable, and git told to read no system or global configuration or attributes."""
    return {**{key: value for key, value in os.environ.items() if not key.startswith("GIT_")},
            "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_ATTR_NOSYSTEM": "1",
            "GIT_TERMINAL_PROMPT": "0", "GIT_NO_REPLACE_OBJECTS": "1", "LC_ALL": "C"}


def run_bounded(command: list[str], cwd: Path, seconds: float, env: dict[str, str] | None = None
                ) -> subprocess.CompletedProcess | None:
    """`command` in a new session; None when it outlived `seconds`, after its whole process group is killed."""
    process = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = process.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.communicate()
        return None
    except BaseException:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()
        raise
    return subprocess.CompletedProcess(command, process.returncode, out, err)


def _unzip(archive: Path, scratch: Path) -> Submission:
    target = Path(tempfile.mkdtemp(prefix="zip-", dir=scratch))
    try:
        unpack(archive, target)
    except Unpackable as problem:
        return Submission(clean(archive.stem), clean(str(archive)), problem=clean_message(problem))
    return _find_inside(target, clean(archive.stem), clean(str(archive)))


def _name_of(path: Path) -> str:
    return clean(path.name or path.resolve().name)


def _stem(target: str) -> str:
    """A repository's name: its folder's (a path or a file:// URL), without `.git`."""
    path = Path(unquote(urlparse(target).path) if target.startswith("file:") else target)
    return clean(path.name.removesuffix(".git") or path.resolve().name)


def _is_bare_repo(path: Path) -> bool:
    return (path / "HEAD").is_file() and (path / "objects").is_dir() and (path / "refs").is_dir()
