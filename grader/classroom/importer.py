"""Door 4, submissions in: finding each student's workspace among the paths the instructor gave, following no link.

A target is a workspace, a folder of them, a git repository on disk (a bare one, or a `file://` URL; cloned into
the run folder) or a zip (unpacked there, its entries counted from its central directory first). Nothing a student
made is followed: a link (a folder that is a link to a classmate's, a link inside a repository, an `alternates` file
that borrows a classmate's objects) is never a way to their work. Each row is named by what the instructor gave (the
folder, the zip's or the URL's name); a repository's last commit author is kept beside it, since anyone can write it.
"""
from __future__ import annotations

import os
import stat
import subprocess
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from grader.classroom.safe_text import clean, clean_message
from grader.classroom.student_run import LEFT_OUT
from grader.classroom.zips import Unpackable, unpack
from grader.course.workspace import ANSWERS
from grader.errors import WorkshopError

REPOSITORY_ENTRIES = 200_000  # files and folders of a repository looked through for links before it is cloned
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
    name = _stem(target)
    borrowed = "it is a symbolic link: links are not followed" if folder.is_symlink() else _borrowed(folder)
    if borrowed:
        return Submission(name, clean(target), problem=borrowed)
    there = Path(tempfile.mkdtemp(prefix="clone-", dir=scratch)) / "repository"
    done = subprocess.run(["git", "-c", "core.hooksPath=/dev/null", "-c", "protocol.allow=never", "-c", "protocol.file.allow=always",
                           "clone", "--quiet", "--no-local", "--no-recurse-submodules", target, str(there)],
                          capture_output=True, stdin=subprocess.DEVNULL, timeout=120)
    if done.returncode != 0:
        last = (done.stderr.decode("utf-8", "replace").strip().splitlines() or ["git clone failed"])[-1]
        return Submission(name, clean(target), problem=clean_message(f"could not clone: {last}"))
    author = subprocess.run(["git", "log", "-1", "--format=%an"], cwd=there, capture_output=True, stdin=subprocess.DEVNULL).stdout
    return _find_inside(there, name, clean(target), clean(author.decode("utf-8", "replace").strip()))


def _borrowed(folder: Path) -> str:
    """Why a repository on disk may hold someone else's work ("" when it cannot): a link anywhere in its git folder
    (objects, refs, HEAD), a `.git` that is a file or a link (it names another repository's), or alternates."""
    git = folder / ".git"
    if os.path.lexists(git) and not (git.is_dir() and not git.is_symlink()):
        return "its .git is a file or a link to another repository's: not followed"
    git = git if os.path.lexists(git) else folder
    seen = 0
    for here, folders, files in os.walk(git):  # os.walk never descends into a link to a folder
        for entry in folders + files:
            seen += 1
            if seen > REPOSITORY_ENTRIES:
                return f"its git folder holds more than {REPOSITORY_ENTRIES:,} entries; repack it (git gc) first"
            if os.path.islink(os.path.join(here, entry)):
                where = os.path.relpath(os.path.join(here, entry), git)
                return clean_message(f"its repository holds a symbolic link ({where}): links are not followed")
    if any(os.path.lexists(git / "objects" / "info" / kind) for kind in ("alternates", "http-alternates")):
        return "its repository borrows objects from another (objects/info/alternates): not cloned"
    return ""


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
