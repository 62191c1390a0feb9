"""Grade a whole class: find every workspace among the paths given, grade them in parallel, one row per student.

A path may be a workspace, a folder of them, a git repository on disk (a `file://` URL or a bare repo, cloned
into the run folder) or a zip (unpacked there). Anything that holds no workspace becomes a row that says so,
never a silent zero. Each workspace is graded through the sandboxed runner (`run_checks`) in a process of
its own, so one student's run can never touch another's.
"""
from __future__ import annotations

import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import zipfile
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from grader.course.workspace import ANSWERS, NotAWorkspace, Workspace
from grader.grading.grade import Grade

ZIP_LIMIT = 200 * 2**20  # bytes a submission may unpack to
LANES = 1  # worker processes per workspace (see grade_all)
PER_CORE = 4  # workspaces graded at once, per core
SKIP = {".git", "stash", "__pycache__", ".pytest_cache", "node_modules", ".venv"}


@dataclass
class Student:
    """One row of the class: where it came from, and its grade or why there is none."""
    name: str
    source: str
    path: Path | None = None
    lesson: int | None = None
    grade: Grade | None = None
    problem: str = ""
    seconds: float = 0.0  # wall time of its grading
    cpu_seconds: float = 0.0  # CPU time of its grading, worker processes included

    @property
    def graded(self) -> bool:
        return self.grade is not None


@dataclass
class ClassRun:
    students: list[Student] = field(default_factory=list)
    seconds: float = 0.0


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
    if target.startswith("file://") or (Path(target).is_dir() and _is_bare_repo(Path(target))):
        return [_clone(target, scratch)]
    if target.split(":", 1)[0] in ("http", "https", "ssh", "git") or target.startswith("git@"):
        return [Student(_stem(target), target, problem="only repositories on disk are graded (a path or file:// URL); clone it first")]
    path = Path(target)
    if path.is_file() and path.suffix == ".zip":
        return [_unzip(path, scratch)]
    if not path.exists():
        return [Student(path.name or target, target, problem="no such file or folder")]
    if path.is_dir() and (path / ANSWERS).is_file():
        return [Student(path.resolve().name, target, path)]
    if path.is_dir():
        entries = sorted(entry for entry in path.iterdir() if not entry.name.startswith(".")
                         and (entry.is_dir() or entry.suffix == ".zip"))
        if entries:
            return [student for entry in entries for student in _expand(str(entry), scratch)]
    return [_find_inside(path, path.name, target)]


def _find_inside(folder: Path, name: str, source: str) -> Student:
    """A student's folder that is their workspace, or holds it one or two levels down (a zip's top folder, say)."""
    if (folder / ANSWERS).is_file():
        return Student(name, source, folder)
    if folder.is_dir():
        found = sorted({answers.parent for depth in ("*/", "*/*/") for answers in folder.glob(depth + ANSWERS)
                        if not SKIP & set(answers.relative_to(folder).parts[:-1])})
        if len(found) == 1:
            return Student(name, source, found[0])
        if len(found) > 1:
            return Student(name, source, problem=f"holds {len(found)} workspaces; name each one instead")
    return Student(name, source, problem=f"not a Rover workspace (no {ANSWERS}; a workspace is made by `workshop start`)")


def _clone(url: str, scratch: Path) -> Student:
    name = _stem(url)
    target = Path(tempfile.mkdtemp(prefix="clone-", dir=scratch)) / name
    done = subprocess.run(["git", "-c", "core.hooksPath=/dev/null", "clone", "--quiet", "--no-recurse-submodules", url, str(target)],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["git clone failed"])[-1]
        return Student(name, url, problem=f"could not clone: {last}")
    author = subprocess.run(["git", "log", "-1", "--format=%an"], cwd=target, capture_output=True, text=True).stdout.strip()
    return _find_inside(target, author or name, url)


def _unzip(archive: Path, scratch: Path) -> Student:
    name = archive.stem
    target = Path(tempfile.mkdtemp(prefix="zip-", dir=scratch))
    try:
        with zipfile.ZipFile(archive) as bundle:
            members = bundle.infolist()
            if sum(member.file_size for member in members) > ZIP_LIMIT:
                return Student(name, str(archive), problem=f"unpacks to more than {ZIP_LIMIT // 2**20} MB")
            for member in members:
                if (member.external_attr >> 16) & 0o170000 == 0o120000:
                    continue  # a symlink could point anywhere on the grader's machine
                bundle.extract(member, target)  # zipfile strips absolute paths and `..` parts
    except (zipfile.BadZipFile, OSError) as problem:
        return Student(name, str(archive), problem=f"not a readable zip: {problem}")
    return _find_inside(target, name, str(archive))


def _settle_lesson(student: Student, lesson: int | None) -> None:
    """The lesson graded: the instructor's `--lesson` when given (the answers file is the student's to edit)."""
    if lesson is not None:
        student.lesson = lesson
        return
    try:
        student.lesson = Workspace.load(student.path).lesson
    except (NotAWorkspace, OSError, UnicodeDecodeError) as problem:
        student.problem = f"{problem} (or pass --lesson N)"


def grade_all(students: list[Student], jobs: int | None = None, progress: Callable[[Student], None] | None = None,
              lanes: int = LANES) -> None:
    """Grade every gradable student in place, `jobs` workspaces at a time, each in a fresh process.

    A lone `workshop check` spreads its checks over several worker processes to finish soon; a class
    is quicker with one worker per workspace (each worker costs a Python start) and more workspaces at
    once, so that one workspace's waits (sleeps, timeouts) are filled by another's work: measured, a
    third less CPU than one `workshop check` per workspace (bench/bulk_grade.py). The price is a longer
    tail for a workspace whose checks time out one after another.
    """
    todo = [student for student in students if student.path is not None and not student.problem]
    if not todo:
        return
    workers = max(1, min(jobs or PER_CORE * (os.cpu_count() or 1), len(todo)))
    options = {"max_tasks_per_child": 1} if sys.version_info >= (3, 11) else {}
    context = multiprocessing.get_context("forkserver" if sys.platform.startswith("linux") else "spawn")
    if context.get_start_method() == "forkserver":
        context.set_forkserver_preload(["grader.classroom.bulk", "grader.grading.grade"])  # import once, fork per workspace
    with ProcessPoolExecutor(workers, mp_context=context, **options) as pool:
        pending = {pool.submit(_grade_one, str(student.path), student.lesson, lanes): student for student in todo}
        try:
            for future in as_completed(pending):
                student = pending[future]
                try:
                    student.grade, student.seconds, student.cpu_seconds = future.result()
                except Exception as crash:  # a grader failure on one workspace must not lose the class
                    student.problem = f"the grader failed on this workspace: {type(crash).__name__}: {crash}"
                if progress:
                    progress(student)
        except KeyboardInterrupt:  # as a terminal's Ctrl-C would: each grading process stops its own workers
            for process in list(getattr(pool, "_processes", {}).values()):
                if process.is_alive():
                    os.kill(process.pid, signal.SIGINT)
            pool.shutdown(wait=True, cancel_futures=True)
            raise


def _grade_one(path: str, lesson: int, lanes: int) -> tuple[Grade, float, float]:
    """Runs in a fresh process per workspace; its CPU time covers the workers it waited for."""
    import resource
    import time

    from grader.grading.grade import checks_up_to
    from grader.grading.runner import run_suite

    started, cpu = time.monotonic(), _cpu(resource)
    suite = run_suite(Path(path), checks_up_to(lesson), jobs=lanes)
    result = Grade(lesson, suite.outcomes, suite.root_cause)
    return result, time.monotonic() - started, _cpu(resource) - cpu


def _cpu(resource) -> float:
    own, waited = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + waited.ru_utime + waited.ru_stime


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
              progress: Callable[[Student], None] | None = None, on_collected: Callable[[list[Student]], None] | None = None) -> ClassRun:
    """Collect, then grade; the clones and unpacked zips live in one run folder, removed however the run ends."""
    import time

    started = time.monotonic()
    scratch = Path(tempfile.mkdtemp(prefix="workshop-class-"))
    try:
        students = collect(targets, scratch, lesson)
        if on_collected:
            on_collected(students)
        grade_all(students, jobs, progress)
        for student in students:
            student.path = student.path if student.path is None or scratch not in student.path.parents else None
        return ClassRun(students, time.monotonic() - started)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
