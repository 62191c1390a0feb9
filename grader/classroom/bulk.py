"""Grade a whole class: find every workspace among the paths given, grade each in a process of its own, one row each.

A path may be a workspace, a folder of them, a git repository on disk (a `file://` URL or a bare repo, cloned into
the run folder) or a zip (unpacked there), found by grader.classroom.importer, which follows no link. A path the instructor typed that cannot be graded at all (missing,
unreadable, not a folder, zip or repository) is one error line; an entry of a class folder that holds no workspace is
a row that says so. Each student is graded by `workshop check --json` in its own process, inside the sandbox
(grader.classroom.student_run), on a private copy of their workspace: never a shared pool that runs student code.
"""
from __future__ import annotations

import os
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from grader.classroom import cleanup, importer, student_run
from grader.classroom.safe_text import clean_message
from grader.course.workspace import NotAWorkspace, Workspace
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
    author: str = ""  # a repository's last commit author, shown beside the name (never as it: anyone can write it)
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


def collect(targets: list[str], scratch: Path, lesson: int | None = None) -> list[Student]:
    """Every student among `targets`, in order (found by grader.classroom.importer); clones and zips are unpacked
    under `scratch`."""
    students = [Student(found.name, found.source, found.path, problem=found.problem, author=found.author)
                for found in importer.find_all(targets, scratch)]
    for student in students:
        if student.path is not None and not student.problem:
            _settle_lesson(student, lesson)
    _unique_names(students)
    return students


def _settle_lesson(student: Student, lesson: int | None) -> None:
    """The lesson graded: the instructor's `--lesson` when given (the answers file is the student's to edit)."""
    if lesson is not None:
        student.lesson = lesson
        return
    try:
        student.lesson = Workspace.load(student.path).lesson
    except (NotAWorkspace, OSError, UnicodeDecodeError) as problem:
        student.problem = clean_message(f"{problem} (or pass --lesson N)")


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
            student.problem = clean_message(why)
        except OSError as problem:  # its copy or its process could not be made: this student only
            student.problem = clean_message(f"could not grade it: {problem}")
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


def run_class(targets: list[str], lesson: int | None = None, jobs: int | None = None,
              progress: Callable[[Student], None] | None = None, on_collected: Callable[[list[Student]], None] | None = None,
              unsafe: bool = False, timeout: float = TIMEOUT) -> ClassRun:
    """Check the targets and the boundary, collect, then grade; everything unpacked or copied lives in one run
    folder, removed however the run ends."""
    importer.check_targets(targets)
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
