"""Grade a whole class: find every workspace among the paths given, grade each in a process of its own, one row each.

A path may be a workspace, a folder of them, a git repository on disk (a `file://` URL or a bare repo, cloned into
the run folder) or a zip (unpacked there). A path the instructor typed that cannot be graded at all (missing,
unreadable, not a folder, zip or repository) is one error line; an entry of a class folder that holds no workspace is
a row that says so. Each student is graded by `workshop check --json` in its own process, inside the sandbox
(grader.classroom.student_run), on a private copy of their workspace: never a shared pool that runs student code.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable
from urllib.parse import unquote, urlparse

from grader.classroom import cleanup, student_run
from grader.classroom.zips import Unpackable, unpack
from grader.course.workspace import ANSWERS, NotAWorkspace, Workspace
from grader.errors import WorkshopError
from grader.grading.runner import Outcome

from grader.boundary.side import NoBoundary, require

TIMEOUT = 600.0  # seconds one student's grading may take, start to end
UNSAFE = "none (--unsafe-no-sandbox: student code ran with the instructor's rights)"


@dataclass
class Student:
    """One row of the class: where it came from, and its grade or why there is none."""
    name: str
    source: str
    path: Path | None = None
    lesson: int | None = None
    outcomes: list[Outcome] | None = None
    problem: str = ""
    seconds: float = 0.0  # wall time of its grading
    cpu_seconds: float = 0.0  # CPU time of its grading process and the processes it waited for

    @property
    def graded(self) -> bool:
        return self.outcomes is not None

    @property
    def own(self) -> list[Outcome]:
        """The graded lesson's own checks: the ones that carry points, as on Gradescope."""
        return [outcome for outcome in self.outcomes or [] if outcome.check.lesson == self.lesson]

    @property
    def regressions(self) -> list[Outcome]:
        """Earlier lessons' checks that fail: handed out solved, so each one is a regression."""
        return [outcome for outcome in self.outcomes or [] if outcome.check.lesson != self.lesson and not outcome.passed]

    @property
    def score(self) -> int:
        return sum(outcome.check.points for outcome in self.own if outcome.passed)

    @property
    def max_score(self) -> int:
        return sum(outcome.check.points for outcome in self.own)

    @property
    def passed(self) -> bool:
        return self.graded and all(outcome.passed for outcome in self.outcomes)


@dataclass
class ClassRun:
    students: list[Student] = field(default_factory=list)
    seconds: float = 0.0
    sandbox: str = ""  # the boundary's backend, or UNSAFE


def boundary(unsafe: bool) -> str:
    """The sandbox backend every student will be graded in; without one, WorkshopError unless `unsafe`."""
    try:
        return require()
    except NoBoundary as missing:
        if unsafe:
            return UNSAFE
        raise WorkshopError(f"{missing}; or pass --unsafe-no-sandbox to grade without one "
                            f"(student code then runs with your rights, and every report says so)") from None


def check_targets(targets: list[str]) -> None:
    """One error line (exit 2) for a target that is mistyped or cannot be graded at all, before anything runs."""
    for target in targets:
        if target.split(":", 1)[0] in ("http", "https", "ssh", "git") or target.startswith("git@"):
            raise WorkshopError(f"{target}: only repositories on disk are graded (a path or a file:// URL); clone it first")
        if target.startswith("file:"):
            parsed = urlparse(target)
            path = Path(unquote(parsed.path))
            if parsed.netloc not in ("", "localhost") or not path.is_dir():
                raise WorkshopError(f"{target}: not a repository on this machine; "
                                    f"a file:// URL names a folder, as in file:///home/me/class/alice.git")
            continue
        path = Path(target)
        if not path.exists():
            raise WorkshopError(f"{target}: no such file or folder")
        if not os.access(path, os.R_OK | (os.X_OK if path.is_dir() else 0)):
            raise WorkshopError(f"{target}: cannot be read (permission denied)")
        if path.is_file() and not zipfile.is_zipfile(path):
            raise WorkshopError(f"{target}: not a folder or a zip; give a workspace, a folder of them, a zip or a repository")


def collect(targets: list[str], scratch: Path, lesson: int | None = None) -> list[Student]:
    """Every student among `targets`, in order; clones and zips are unpacked under `scratch`."""
    students: list[Student] = []
    for target in targets:
        students.extend(_expand(target, scratch))
    for student in students:
        if student.path is not None and not student.problem:
            _settle_lesson(student, lesson)
    _unique_names(students)
    return students


def _expand(target: str, scratch: Path) -> list[Student]:
    if target.startswith("file:") or (Path(target).is_dir() and _is_bare_repo(Path(target))):
        return [_clone(target, scratch)]
    path = Path(target)
    if path.is_file():
        return [_unzip(path, scratch)]
    if path.is_dir() and (path / ANSWERS).is_file():
        return [Student(path.resolve().name, target, path)]
    if path.is_dir():
        entries = sorted(entry for entry in path.iterdir() if not entry.name.startswith(".")
                         and not entry.is_symlink() and (entry.is_dir() or entry.suffix == ".zip"))
        if entries:
            return [student for entry in entries for student in _expand(str(entry), scratch)]
    return [_find_inside(path, path.name, target)]


def _find_inside(folder: Path, name: str, source: str) -> Student:
    """A student's folder that is their workspace, or holds it one or two levels down (a zip's top folder, say)."""
    if (folder / ANSWERS).is_file():
        return Student(name, source, folder)
    if folder.is_dir():
        found = sorted({answers.parent for depth in ("*/", "*/*/") for answers in folder.glob(depth + ANSWERS)
                        if not student_run.LEFT_OUT & set(answers.relative_to(folder).parts[:-1])})
        if len(found) == 1:
            return Student(name, source, found[0])
        if len(found) > 1:
            return Student(name, source, problem=f"holds {len(found)} workspaces; name each one instead")
    return Student(name, source, problem=f"not a Rover workspace (no {ANSWERS}; a workspace is made by `workshop start`)")


def _clone(url: str, scratch: Path) -> Student:
    name = _stem(url)
    target = Path(tempfile.mkdtemp(prefix="clone-", dir=scratch)) / name
    done = subprocess.run(["git", "-c", "core.hooksPath=/dev/null", "-c", "protocol.allow=never", "-c", "protocol.file.allow=always",
                           "clone", "--quiet", "--no-recurse-submodules", url, str(target)],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["git clone failed"])[-1]
        return Student(name, url, problem=f"could not clone: {last}")
    author = subprocess.run(["git", "log", "-1", "--format=%an"], cwd=target, capture_output=True, text=True).stdout.strip()
    return _find_inside(target, author or name, url)


def _unzip(archive: Path, scratch: Path) -> Student:
    target = Path(tempfile.mkdtemp(prefix="zip-", dir=scratch))
    try:
        unpack(archive, target)
    except Unpackable as problem:
        return Student(archive.stem, str(archive), problem=str(problem))
    return _find_inside(target, archive.stem, str(archive))


def _settle_lesson(student: Student, lesson: int | None) -> None:
    """The lesson graded: the instructor's `--lesson` when given (the answers file is the student's to edit)."""
    if lesson is not None:
        student.lesson = lesson
        return
    try:
        student.lesson = Workspace.load(student.path).lesson
    except (NotAWorkspace, OSError, UnicodeDecodeError) as problem:
        student.problem = f"{problem} (or pass --lesson N)"


def grade_all(students: list[Student], scratch: Path, sandbox: str, jobs: int | None = None, timeout: float = TIMEOUT,
              progress: Callable[[Student], None] | None = None) -> None:
    """Grade every gradable student in place, `jobs` at a time (default: one per core), each in its own process.

    Threads here only wait: each student's grading is a `workshop check` process with its own session, clock and
    folder. Ctrl-C kills every one of them (and whatever they started) before it returns to the caller.
    """
    todo = [student for student in students if student.path is not None and not student.problem]
    token = f"class-{os.urandom(6).hex()}"
    stopping = threading.Event()
    forced = None if sandbox == UNSAFE else sandbox

    again: list[tuple[int, Student]] = []  # doubtful rows, graded once more when no classmate runs beside them

    def grade(number: int, student: Student, attempt: int = 1) -> Student:
        if stopping.is_set():
            return student
        folder = scratch / f"student-{number}-{attempt}"
        folder.mkdir(mode=0o700)
        try:
            graded = student_run.grade_student(student.path, student.lesson, folder, f"{token}-{number}", timeout, forced,
                                               attempts=(attempt,))
            student.outcomes, student.seconds, student.cpu_seconds = graded.outcomes, graded.seconds, graded.cpu_seconds
            if attempt == 1 and student_run.doubtful(graded):
                again.append((number, student))
        except student_run.NotGraded as why:
            student.problem = str(why)
        except OSError as problem:  # its copy or its process could not be made: this student only
            student.problem = f"could not grade it: {problem}"
        finally:
            cleanup.remove_tree(folder)
        return student

    workers = max(1, min(jobs or os.cpu_count() or 1, len(todo) or 1))
    before, since = cleanup.adopt_orphans()
    try:
        _grade_in_threads(todo, grade, workers, stopping, token, _unless(again, progress))
        for number, student in sorted(again, key=lambda pair: pair[0]):  # alone: what its witnesses see is its own
            grade(number, student, attempt=2)
            if progress and not stopping.is_set():
                progress(student)
    finally:
        cleanup.end_processes(None, token)
        cleanup.end_orphans(before, since)


def _unless(again: list[tuple[int, Student]], progress: Callable[[Student], None] | None):
    """Progress for every row but the doubtful ones, which say theirs once graded again."""
    if progress is None:
        return None
    return lambda student: None if any(student is waiting for _, waiting in again) else progress(student)


def _grade_in_threads(todo, grade, workers, stopping, token, progress) -> None:
    with ThreadPoolExecutor(workers, thread_name_prefix="class-grade") as pool:
        pending = [pool.submit(grade, number, student) for number, student in enumerate(todo)]
        try:
            for future in as_completed(pending):
                student = future.result()
                if progress and (student.graded or student.problem):
                    progress(student)
        except BaseException:  # Ctrl-C: nothing new starts, and what runs is killed until every thread has returned
            stopping.set()
            for future in pending:
                future.cancel()
            while not all(future.done() for future in pending):
                cleanup.end_processes(None, token)
                time.sleep(0.1)
            raise


def _unique_names(students: list[Student]) -> None:
    seen: dict[str, int] = {}
    for student in students:
        seen[student.name] = seen.get(student.name, 0) + 1
        if seen[student.name] > 1:
            student.name = f"{student.name} ({seen[student.name]})"


def _stem(url: str) -> str:
    tail = url.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    return tail.removesuffix(".git") or url


def _is_bare_repo(path: Path) -> bool:
    return (path / "HEAD").is_file() and (path / "objects").is_dir() and (path / "refs").is_dir()


def run_class(targets: list[str], lesson: int | None = None, jobs: int | None = None,
              progress: Callable[[Student], None] | None = None, on_collected: Callable[[list[Student]], None] | None = None,
              unsafe: bool = False, timeout: float = TIMEOUT) -> ClassRun:
    """Check the targets and the boundary, collect, then grade; everything unpacked or copied lives in one run
    folder, removed however the run ends."""
    check_targets(targets)
    sandbox = boundary(unsafe)
    started = time.monotonic()
    scratch = Path(tempfile.mkdtemp(prefix="workshop-class-"))
    try:
        students = collect(targets, scratch, lesson)
        if on_collected:
            on_collected(students)
        grade_all(students, scratch, sandbox, jobs, timeout, progress)
        for student in students:
            student.path = student.path if student.path is None or scratch not in student.path.parents else None
        return ClassRun(students, time.monotonic() - started, sandbox)
    finally:
        cleanup.remove_tree(scratch)
