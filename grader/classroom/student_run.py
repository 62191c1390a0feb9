"""One student of a class, graded by a `workshop check --json` process of its own, on a private copy of their workspace.

The grading process runs in its own session with an environment built from an allow-list (no API key, no token of
the instructor's), a HOME and TMPDIR in the student's own folder, and a clock; when it ends, however it ends, every
process it left is killed (its process group, every process carrying the student's mark, orphans handed to us) and
the student's folder is removed. Its stdout is bounded and trusted only as one JSON object naming exactly the checks
asked for: a crash, a kill, a flood or a hang makes this student's row "not graded", and nobody else's.
"""
from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from grader.classroom.cleanup import MARK, end_processes, give, kill_group
from grader.course import kit
from grader.boundary.hidden_memory import LOST as LOST_MEMORY
from grader.boundary.proxy import OUT_OF_MEMORY
from grader.grading.runner import Outcome

OUTPUT_LIMIT = 16 << 20  # bytes of JSON a grading process may print
COPY_FILES, COPY_BYTES, COPY_DEPTH = 10_000, 200 << 20, 40  # what a private copy of one workspace may hold
LEFT_OUT = {".git", ".venv", "venv", "node_modules", "__pycache__", ".pytest_cache", ".mypy_cache"}
KEPT_ENV = ("PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TZ", "WORKSHOP_LINUX_EXTRAS", "WORKSHOP_WORKER_START",
            "WORKSHOP_HIDDEN_MEMORY")
STATUSES = {"passed", "failed", "error", "timeout"}
BUSY = "too busy"  # in the message of a check the machine could not finish (SPEC 9): graded again, once
LOST_DISK = "the disk holding the run folder lost"  # a run stopped for disk it cannot see (a classmate's?): again, once
LOST = (LOST_DISK, LOST_MEMORY, OUT_OF_MEMORY)  # ... or for memory no process holds, or a machine out of memory
# The grader as this interpreter imports it, never a `grader/` the workspace (the process's cwd) could hold.
BOOT = ("import json, sys; sys.path[:] = json.loads(sys.argv.pop(1)); "
        "sys.argv[0] = 'workshop'; from grader.cli import run; run()")


class NotGraded(Exception):
    """Why this student has no grade: one line for their row."""


@dataclass
class Graded:
    lesson: int
    outcomes: list[Outcome]
    sandbox: str | None  # the backend the check reported, when it reports one
    seconds: float
    cpu_seconds: float


def grade_student(workspace: Path, lesson: int, folder: Path, token: str, timeout: float, sandbox: str | None,
                  user: tuple[int, int] | None = None, attempts: tuple[int, ...] = (1, 2)) -> Graded:
    """Grade `workspace` as `lesson` in `folder` (the student's own, removed by the caller); a doubtful result (see
    `doubtful`) runs again, once, unless `attempts` holds one. With `user` (uid, gid: the autograder, as root) the copy
    is theirs and the grading runs as them."""
    for attempt in attempts:
        copy = folder / f"workspace-{attempt}"
        private_copy(workspace, copy)
        graded = _run_check(copy, lesson, folder, f"{token}-{attempt}", timeout, sandbox, user)
        if not doubtful(graded):
            break
    return graded


def doubtful(graded: Graded) -> bool:
    """A run the machine spoiled, not the code: too busy to finish a check, stopped for disk or memory that no count
    of this run's could pin on it (another run's beside it, or another program's), or a worker the kernel's
    out-of-memory killer ended."""
    return any(outcome.status == "error" and (BUSY in outcome.message or any(lost in outcome.message for lost in LOST))
               for outcome in graded.outcomes)


def private_copy(source: Path, target: Path) -> None:
    """Copy the workspace's files and folders, bounded, leaving out links, devices, pipes and caches (and .git, whose
    class file would post grades to a board): nothing in the copy leads outside it."""
    if source.is_symlink():  # a link would make someone else's folder this copy (the importer never gives one)
        raise NotGraded("its workspace is a symbolic link: links are not followed")
    files = size = 0
    stack = [(source, target, 0)]
    while stack:
        here, there, depth = stack.pop()
        if depth > COPY_DEPTH:
            raise NotGraded(f"its folders nest deeper than {COPY_DEPTH} levels (in {here.relative_to(source)})")
        there.mkdir(mode=0o755)
        with os.scandir(here) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False) and entry.name not in LEFT_OUT:
                    stack.append((Path(entry.path), there / entry.name, depth + 1))
                elif entry.is_file(follow_symlinks=False):
                    files, size = files + 1, size + entry.stat(follow_symlinks=False).st_size
                    if files > COPY_FILES or size > COPY_BYTES:
                        raise NotGraded(f"it holds more than {COPY_FILES:,} files or {COPY_BYTES >> 20} MB "
                                        f"(without {', '.join(sorted(LEFT_OUT))})")
                    _copy_file(Path(entry.path), there / entry.name)


def _copy_file(source: Path, target: Path) -> None:
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    reading = os.open(source, flags)
    try:
        with open(reading, "rb", closefd=False) as src, open(target, "xb") as out:
            while chunk := src.read(1 << 20):
                out.write(chunk)
    finally:
        os.close(reading)
    target.chmod(0o755 if os.stat(source).st_mode & 0o111 else 0o644)


def _environment(folder: Path, token: str, sandbox: str | None) -> dict[str, str]:
    home, tmp = folder / "home", folder / "tmp"
    home.mkdir(mode=0o700, exist_ok=True)
    tmp.mkdir(mode=0o700, exist_ok=True)
    env = {name: os.environ[name] for name in KEPT_ENV if name in os.environ}
    env.setdefault("PATH", os.defpath)
    env.update(HOME=str(home), TMPDIR=str(tmp), TEMP=str(tmp), TMP=str(tmp), PYTHONDONTWRITEBYTECODE="1", **{MARK: token})
    if sandbox:
        env["WORKSHOP_SANDBOX"] = sandbox  # the backend the class was promised, or no grade (never a silent fallback)
    return env


def _run_check(copy: Path, lesson: int, folder: Path, token: str, timeout: float, sandbox: str | None,
               user: tuple[int, int] | None = None) -> Graded:
    path = json.dumps([entry for entry in sys.path if entry and Path(entry).is_absolute()])
    env = _environment(folder, token, sandbox)
    switch = {}
    if user:
        for mine in (copy, Path(env["HOME"]), Path(env["TMPDIR"])):
            give(mine, *user)
        switch = {"user": user[0], "group": user[1], "extra_groups": []}
    started = time.monotonic()
    process = subprocess.Popen([sys.executable, "-I", "-c", BOOT, path, "check", "--json", "--lesson", str(lesson)],
                               cwd=copy, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               start_new_session=True, **switch)
    flooded = threading.Event()
    out = _Reader(process.stdout, OUTPUT_LIMIT, lambda: (flooded.set(), kill_group(process.pid)))
    err = _Reader(process.stderr, 4096, None, keep_tail=True)
    late = threading.Event()
    clock = threading.Timer(timeout, lambda: (late.set(), kill_group(process.pid)))
    clock.start()
    try:
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
    finally:
        clock.cancel()
        end_processes(process.pid, token)
        for reader in (out, err):
            reader.finish()
    seconds = time.monotonic() - started
    if flooded.is_set():
        raise NotGraded(f"its grading printed more than {OUTPUT_LIMIT >> 20} MB (a flood); stopped")
    if late.is_set():
        raise NotGraded(f"its grading was still running after {timeout:g} s; stopped")
    if process.returncode < 0:
        raise NotGraded(f"the process grading it was killed ({_signal_name(-process.returncode)})")
    if process.returncode not in (0, 1):
        last = (err.text().strip().splitlines() or ["no message"])[-1]
        raise NotGraded(f"`workshop check` stopped with exit status {process.returncode}: {last[:200]}")
    try:
        lesson_seen, outcomes, reported = parse(out.data(), lesson)
    except NotGraded as problem:  # say what the grading said, too: an empty report has a reason on stderr
        said = (err.text().strip().splitlines() or [""])[-1]
        raise NotGraded(f"{problem}{': ' + said[:200] if said else ''}") from None
    if sandbox and reported not in (None, sandbox):
        raise NotGraded(f"it was graded in the {reported!r} sandbox, not {sandbox!r}")
    return Graded(lesson_seen, outcomes, reported, seconds, usage.ru_utime + usage.ru_stime)


def parse(data: bytes, lesson: int) -> tuple[int, list[Outcome], str | None]:
    """The outcomes in `workshop check --json`'s output, if it is exactly the report asked for; else NotGraded."""
    try:
        report = json.loads(data)
        checks = report["checks"]
        expected = [check for number in range(lesson + 1) for check in kit.lesson(number).checks]
        if report["lesson"] != lesson or [entry["id"] for entry in checks] != [check.id for check in expected]:
            raise ValueError("not the checks of the lesson asked for")
        outcomes = [Outcome(check, entry["status"], str(entry.get("message", ""))[:2000])
                    for check, entry in zip(expected, checks)]
        if any(outcome.status not in STATUSES for outcome in outcomes):
            raise ValueError("a check with an unknown status")
        sandbox = report.get("sandbox")
        return lesson, outcomes, sandbox if isinstance(sandbox, str) else None
    except (ValueError, KeyError, TypeError) as problem:
        raise NotGraded(f"its grading printed something that is not a report ({str(problem)[:120]})") from None


class _Reader(threading.Thread):
    """Drain a pipe: keep the first `limit` bytes (or the last, for stderr), call `over` once past it."""

    def __init__(self, pipe, limit: int, over, keep_tail: bool = False):
        super().__init__(daemon=True)
        self.pipe, self.limit, self.over, self.keep_tail = pipe, limit, over, keep_tail
        self.buffer, self.total, self.stopping = bytearray(), 0, threading.Event()
        self.start()

    def run(self) -> None:
        descriptor = self.pipe.fileno()
        while True:  # polled, so a process that keeps the pipe open cannot keep this thread
            if not select.select([descriptor], [], [], 0.2)[0]:
                if self.stopping.is_set():
                    return
                continue
            chunk = os.read(descriptor, 1 << 16)
            if not chunk:
                return
            self.total += len(chunk)
            if self.keep_tail:
                self.buffer = (self.buffer + chunk)[-self.limit:]
            elif self.total <= self.limit:
                self.buffer += chunk
            elif self.over:
                self.over, over = None, self.over
                over()

    def finish(self) -> None:
        self.stopping.set()
        self.join()
        self.pipe.close()

    def data(self) -> bytes:
        return bytes(self.buffer)

    def text(self) -> str:
        return self.data().decode("utf-8", "replace")


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
