"""Run checks in worker processes, each check on a clock, and survive whatever the student's code does.

A few lanes run side by side, each a thread that feeds one worker (`python -m grader.grading.worker`,
in a session of its own so a kill takes its children too) one check at a time from a shared
queue, so slow checks spread out by themselves. A check past its time limit gets its worker
killed and is reported as a timeout; a worker that dies mid-check is reported as an error;
either way the lane starts a fresh worker for the next check.
"""
from __future__ import annotations

import json
import os
import queue
import select
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

from grader.course.kit import Check

TIME_LIMIT = 10.0
LANES = 4  # checks mostly wait (on sleeps, subprocesses, clocks), so more lanes than cores pay off


@dataclass(frozen=True)
class Outcome:
    check: Check
    status: str  # passed | failed | error | timeout
    message: str = ""
    seconds: float = 0.0  # wall time of the check, for the reports

    @property
    def passed(self) -> bool:
        return self.status == "passed"


def run_checks(workspace: Path, checks: list[Check], time_limit: float = TIME_LIMIT, jobs: int = LANES) -> list[Outcome]:
    """Every check's outcome, in the order given."""
    todo: queue.SimpleQueue[Check] = queue.SimpleQueue()
    for check in sorted(checks, key=lambda check: not check.slow):  # slow ones first, so they overlap
        todo.put(check)
    finished: dict[str, Outcome] = {}
    lanes = [threading.Thread(target=_lane, args=(workspace, todo, finished, time_limit)) for _ in range(max(1, min(jobs, len(checks))))]
    for lane in lanes:
        lane.start()
    for lane in lanes:
        lane.join()
    return [finished[check.id] for check in checks]


def _lane(workspace: Path, todo: queue.SimpleQueue, finished: dict[str, Outcome], time_limit: float) -> None:
    worker = None
    try:
        while True:
            try:
                check = todo.get_nowait()
            except queue.Empty:
                return
            worker = worker or _Worker(workspace)
            started = time.monotonic()
            outcome = worker.run(check, time_limit)
            finished[check.id] = outcome = replace(outcome, seconds=time.monotonic() - started)
            if outcome.status == "timeout" or not worker.alive():
                worker.stop()
                worker = None
    finally:
        if worker:
            worker.stop()


class _Worker:
    def __init__(self, workspace: Path):
        orders_read, self.orders = os.pipe()
        self.reports, report_write = os.pipe()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "grader.grading.worker", str(workspace), str(orders_read), str(report_write)],
            cwd=workspace, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(orders_read, report_write), start_new_session=True,
        )
        os.close(orders_read)
        os.close(report_write)
        self.buffer = b""

    def run(self, check: Check, time_limit: float) -> Outcome:
        try:
            os.write(self.orders, f"{check.lesson}:{check.id}\n".encode())
        except BrokenPipeError:
            return Outcome(check, "error", "the grader's worker process ended before this check could start")
        deadline = time.monotonic() + time_limit
        while b"\n" not in self.buffer:
            ready, _, _ = select.select([self.reports], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                return Outcome(check, "timeout", f"still running after {time_limit:g} s: is there an endless loop, or a call that waits forever?")
            chunk = os.read(self.reports, 65536)
            if not chunk:
                code = self.process.wait()
                return Outcome(check, "error", f"the check's process died (exit status {code}) before reporting: did the code call os._exit, or crash Python?")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        event = json.loads(line)
        return Outcome(check, event["status"], event["message"])

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        """End the worker and anything it started (a bash tool's children included)."""
        for fd in (self.orders, self.reports):
            os.close(fd)
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.process.wait()
