"""Run checks in worker processes, each check on a clock, and survive whatever the student's code does.

Workers are started with `python -m grader.worker` in their own session (so a kill takes
their children too) and report over a pipe. A check that runs past its time limit gets its
worker killed and reported as a timeout; a worker that dies mid-check is reported as an
error; either way a fresh worker picks up the checks that are left.
"""
from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from grader.kit import Check

TIME_LIMIT = 10.0


@dataclass(frozen=True)
class Outcome:
    check: Check
    status: str  # passed | failed | error | timeout
    message: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "passed"


def run_checks(workspace: Path, checks: list[Check], time_limit: float = TIME_LIMIT, jobs: int = 2) -> list[Outcome]:
    """Every check's outcome, in the order given; checks are shared out over `jobs` workers."""
    queues = [checks[start::jobs] for start in range(jobs) if checks[start::jobs]]
    with ThreadPoolExecutor(max_workers=len(queues) or 1) as pool:
        finished = {}
        for outcomes in pool.map(lambda queue: _run_queue(workspace, queue, time_limit), queues):
            finished.update(outcomes)
    return [finished[check.id] for check in checks]


def _run_queue(workspace: Path, queue: list[Check], time_limit: float) -> dict[str, Outcome]:
    pending = list(queue)
    outcomes: dict[str, Outcome] = {}
    while pending:
        for outcome in _one_worker(workspace, pending, time_limit):
            outcomes[outcome.check.id] = outcome
        pending = [check for check in pending if check.id not in outcomes]
    return outcomes


def _one_worker(workspace: Path, pending: list[Check], time_limit: float):
    """Yield outcomes from one worker until it finishes, or until it has to be killed."""
    by_key = {f"{check.lesson}:{check.id}": check for check in pending}
    read_end, write_end = os.pipe()
    worker = subprocess.Popen(
        [sys.executable, "-m", "grader.worker", str(workspace), str(write_end), *by_key],
        cwd=workspace, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        pass_fds=(write_end,), start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    os.close(write_end)
    current, deadline, buffer = None, time.monotonic() + time_limit, b""
    try:
        while True:
            ready, _, _ = select.select([read_end], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                yield Outcome(current or pending[0], "timeout", f"still running after {time_limit:.0f} s: is there an endless loop, or a call that waits forever?")
                return
            chunk = os.read(read_end, 65536)
            if not chunk:
                break
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                event = json.loads(line)
                if "start" in event:
                    current, deadline = by_key[event["start"]], time.monotonic() + time_limit
                else:
                    yield Outcome(by_key[event["id"]], event["status"], event["message"])
                    current = None
        code = worker.wait()
        if current is not None or code != 0:
            yield Outcome(current or pending[0], "error", f"the check's process died (exit status {code}) before reporting: did the code call os._exit, or crash Python?")
    finally:
        os.close(read_end)
        _kill_group(worker)


def _kill_group(worker: subprocess.Popen) -> None:
    """End the worker and anything it started (a bash tool's children included)."""
    try:
        os.killpg(worker.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    worker.wait()
