"""Run checks in the grader's process against student code in sandboxed workers, each check on a clock.

First a zygote process (grader.boundary.worker) imports the student's `rover`, once, on its own
clock: if that fails, the run stops there with one root cause instead of a failure per check.
Then a few lanes run side by side, each a thread with its own worker (forked by the zygote on Linux,
so it starts in milliseconds; a fresh interpreter on macOS: grader.boundary.starting) that takes checks from a shared queue, so slow checks spread out by
themselves. The check itself runs here, in the lane's thread; only its calls into the
student's code go to the worker (grader.grading.lab and proxy).
The student's side (the zygote and all it forks) runs inside one boundary for the whole run
(grader.boundary.side: bubblewrap, Seatbelt, or the process fallback), named in the Suite.
Each check's clock is CPU seconds of its worker's tree (grader.boundary.clocks), with a
wall-clock backstop: a check past its CPU budget, or asleep past it, gets its worker killed and
is a timeout; one the machine was too busy to finish is an error that asks for a re-run; a tree
over the memory limit is killed and fails; a worker that breaks the protocol or dies makes its
check an error; either way the lane starts a fresh worker.

Everything the run makes lives in one RunFolder (grader.boundary.runfolder), ended and removed
on the way out, whatever the way out is: the end, an exception, Ctrl-C or SIGTERM.
"""
from __future__ import annotations

import os
import queue
import re
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from grader.course.kit import Check
from grader.boundary import clocks
from grader.boundary.clocks import POLL, CheckTimeout, DiskExceeded, HiddenDisk, MemoryExceeded
from grader.boundary.hidden_memory import LOST
from grader.grading.lab import MESSAGE_LIMIT, TEST_RUN, CheckFailed, Lab, StudentCrashed
from grader.boundary.proxy import OUT_OF_MEMORY, Stopped, Worker, WorkerLost, Zygote
from grader.boundary.runfolder import RunFolder, remove_tree

TIME_LIMIT = 10.0  # CPU seconds of a worker's tree for one check (the backstop is clocks.BACKSTOP times that, in wall time)
SIDE_BROKEN = "the grader's sandbox did not start"  # a root cause that is the machine's, not the student's
IMPORT_LIMIT = 5.0  # CPU seconds of the import
BUSY = "the machine was too busy to finish this check; run `workshop check` again"
BACKGROUND = ("the code imported at the start kept working in the background ({}): code that runs when rover is "
              "imported must not start threads or processes; start them in a tool's run()")
MACHINE_PHRASES = ("too busy", "the disk holding the run folder lost", LOST, OUT_OF_MEMORY)  # doubtful rows: class grade
WRONG_TYPE = re.compile(r"^\w+ returned (a )?\w+[ ,].*expected ToolResult")  # grader.grading.harness.result_data's words
TYPE_HINT = ("Every tool's run() returns a ToolResult (from rover.tools.result): `return ToolResult(text)`, or "
             "`ToolResult(text, is_error=True)` for a failure; raise ToolError(message) to refuse a call.")
HARNESS = "grader.grading.harness"  # the module whose answer() serves each request in the workers (the boundary runs it)
LANES = 8  # checks mostly wait (on sleeps, subprocesses, clocks), and a forked worker costs ~5 ms: lanes are cheap


@dataclass(frozen=True)
class Outcome:
    check: Check
    status: str  # passed | failed | error | timeout
    message: str = ""
    seconds: float = 0.0  # wall time of the check

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    @property
    def first_hint(self) -> str:
        """The hint shown beside the message: the check's first, unless the tool returned something that is not a
        ToolResult at all; then every hint about what it should say is beside the point, and this one is not."""
        if WRONG_TYPE.search(self.message):
            return TYPE_HINT
        return self.check.hints[0] if self.check.hints else ""

    @property
    def busy(self) -> bool:
        """Not the student's doing: the machine was too busy to finish it. Never a failure, never a regression."""
        return self.status == "error" and self.message.endswith(BUSY)


@dataclass
class Suite:
    outcomes: list[Outcome]
    root_cause: str | None = None  # the rover package did not import: one line with file and line
    sandbox: str = ""  # the boundary the student's code ran in (bwrap, seatbelt, process)


def run_checks(workspace: Path, checks: list[Check], time_limit: float = TIME_LIMIT, jobs: int = LANES,
               on_outcome: Callable[[Outcome], None] | None = None, boundary=None,
               replays: dict[str, str] | None = None) -> list[Outcome]:
    """Every check's outcome, in the order given; `on_outcome` sees each one as it is ready (in this thread)."""
    return run_suite(workspace, checks, time_limit, jobs, on_outcome, boundary, replays=replays).outcomes


def run_suite(workspace: Path, checks: list[Check], time_limit: float = TIME_LIMIT, jobs: int = LANES,
              on_outcome: Callable[[Outcome], None] | None = None, boundary=None,
              on_start: Callable[[Check], None] | None = None, replays: dict[str, str] | None = None) -> Suite:
    """Grade in the best boundary this machine has (`boundary.choose()`), unless one is given. `on_start` hears of
    each check as a lane takes it (in that lane's thread: keep it short and thread-safe). Checks other programs kept
    from finishing ("too busy") are graded once more, alone (no more lanes than cores); only if that fails too is the run "busy".
    `replays`: for a caller that grades the same workspace again (watch): the scenario test runs recorded so far
    (RunFolder.replays), replayed in this run and replaced, at its end, by this run's own."""
    from grader.grading import checks as registry
    from grader.boundary.side import choose

    workspace = Path(workspace).resolve()
    run = _Run(workspace, checks, time_limit, registry.REGISTRY, boundary or choose(),
               RunFolder(replayed=TEST_RUN, replays=replays), carry=replays is not None)
    run.on_start = on_start
    with _terminate_as_exit():
        try:
            run.zygote = Zygote(run.folder, run.workspace, run.boundary, HARNESS)  # it imports the student's rover while we load the checks
            for lesson in sorted({check.lesson for check in checks}):
                registry.load(lesson)
            if run.imported():
                run.start(max(1, min(jobs, len(checks))))
            suite = run.collect(on_outcome)
        except KeyboardInterrupt:  # the process is on its way out: from here on a second Ctrl-C must not cut it short
            _install(signal.SIGINT, signal.SIG_IGN)
            raise
        finally:
            with _sigint_ignored():
                run.stop()
                if replays is not None:
                    replays.clear()
                    replays.update(run.kept)
    doubtful = [outcome.check for outcome in suite.outcomes if outcome.busy]
    if doubtful and boundary is None and jobs > 1:  # other programs held the cores: those checks once more, alone
        lanes = min(len(doubtful), os.cpu_count() or 1, jobs - 1)  # no more lanes than cores, and fewer than before
        again = {outcome.check.id: outcome for outcome in run_suite(workspace, doubtful, time_limit, lanes, on_outcome, None, on_start,
                                                                    replays).outcomes}
        suite.outcomes = [again.get(outcome.check.id, outcome) for outcome in suite.outcomes]
    return suite


@dataclass
class _Run:
    workspace: Path
    checks: list[Check]
    time_limit: float
    registry: dict
    boundary: object
    folder: RunFolder
    stopping: threading.Event = field(default_factory=threading.Event)
    results: queue.SimpleQueue = field(default_factory=queue.SimpleQueue)
    root_cause: str | None = None
    stopped_by: str = ""  # why the run stopped before its end (the run folder filled where no one check answers for it)
    side_broken: bool = False  # the sandbox itself failed to start (root_cause says how)
    zygote: Zygote | None = None
    workers: list[Worker] = field(default_factory=list)
    lanes: list[threading.Thread] = field(default_factory=list)
    on_start: Callable[[Check], None] | None = None
    carry: bool = False  # read the side's test-run records as the run ends (into `kept`), for the caller's next run
    kept: dict[str, str] = field(default_factory=dict)

    def imported(self) -> bool:
        """Did the student's rover import (once, in the zygote, on its own clock)? If not, the run's root cause says why."""
        try:
            answer = self.zygote.imported(IMPORT_LIMIT, self.stopping)
            busy = self.zygote.background(strays=True) if "ok" in answer else ""
            if busy:
                self.zygote.end_strays()
                cause = BACKGROUND.format(busy)
            elif "ok" in answer:
                return True
            else:
                cause = _import_error(answer)
        except CheckTimeout as late:
            where = self.zygote.stuck_at()
            cause = (BUSY.replace("this check", "importing it") if late.kind == "busy" else
                     f"importing it took over {IMPORT_LIMIT:g} s{', stuck in ' + where if where else ''}: an endless loop, deep recursion or a wait at import?")
        except HiddenDisk as lost:  # disk or memory the machine lost where no count sees: whose, unknown
            cause = f"while it was imported, {lost}"
        except MemoryExceeded as hoard:
            cause = f"importing it {'filled its folders' if isinstance(hoard, DiskExceeded) else 'used too much memory'}: {hoard}"
        except WorkerLost as lost:
            said = self.zygote.complaint()
            if said:  # the side died before the student's code was even loaded: the machine's problem
                self.root_cause = _cut(f"{SIDE_BROKEN}: {said}; a problem of this machine, not of your code")
                self.side_broken = True
                return False
            cause = f"the process importing it died: {lost}"
        self.root_cause = _cut(own_words(cause))
        return False

    def start(self, lanes: int) -> None:
        self.todo: queue.SimpleQueue[Check] = queue.SimpleQueue()
        for check in sorted(self.checks, key=lambda check: not check.slow):  # slow ones first, so they overlap
            self.todo.put(check)
        self.lanes = [threading.Thread(target=self._lane, daemon=True) for _ in range(lanes)]
        for lane in self.lanes:
            lane.start()
        threading.Thread(target=self._watch_zygote, daemon=True).start()

    def _watch_zygote(self) -> None:
        """Work the student's code does in the zygote after the import (no check's clock sees it) voids the run."""
        while not self.stopping.wait(POLL) and any(lane.is_alive() for lane in self.lanes):
            busy = self.zygote.background()
            if busy:
                self.zygote.end_strays()
                self.root_cause = _cut(own_words(BACKGROUND.format(busy)))
                self.stopping.set()
                return

    def collect(self, on_outcome) -> Suite:
        finished: dict[str, Outcome] = {}
        while len(finished) < len(self.checks) and self.root_cause is None:
            try:
                outcome = self.results.get(timeout=0.1)
            except queue.Empty:
                if not any(lane.is_alive() for lane in self.lanes) and self.results.empty():
                    break
                continue
            finished[outcome.check.id] = outcome
            if on_outcome:
                on_outcome(outcome)
        if self.root_cause is not None:
            cause = self.root_cause
            said = f"not run: {cause}" if self.side_broken or cause.startswith(BACKGROUND[:30]) else \
                f"not run: the rover package does not import ({cause})"
            outcomes = [Outcome(check, "error", _cut(said)) for check in self.checks]
            return Suite(outcomes, cause, self.boundary.name)
        missing = _cut(f"not run: {self.stopped_by}") if self.stopped_by else "not run: the grader's lane for it stopped"
        return Suite([finished.get(check.id) or Outcome(check, "error", missing) for check in self.checks], sandbox=self.boundary.name)

    def stop(self) -> None:
        self.stopping.set()
        for worker in list(self.workers):
            worker.stop()
        deadline = time.monotonic() + 0.5
        for lane in self.lanes:
            if lane.is_alive():  # a Ctrl-C while start() was starting them leaves some never started
                lane.join(max(0.0, deadline - time.monotonic()))
        for worker in list(self.workers):  # one a lane started while we were stopping the others
            worker.stop()
        if self.zygote:
            self.zygote.stop()
        self.boundary.end()
        try:
            if self.carry:
                self.kept = self.folder.replays()  # the side is gone: its records are whole or absent
        finally:
            self.folder.close()

    # --- one lane ---------------------------------------------------------------------------

    def _lane(self) -> None:
        worker = None
        try:
            while not self.stopping.is_set() and not self.stopped_by:  # stopped_by: the checks left are not run
                try:
                    check = self.todo.get_nowait()
                except queue.Empty:
                    return
                if self.on_start:
                    self.on_start(check)
                try:
                    worker = worker or self._worker()
                except WorkerLost as lost:
                    self.results.put(Outcome(check, "error", _cut(own_words(f"no worker to run it: {lost}"))))
                    continue
                except MemoryExceeded as hoard:  # its import filled its folders, or used too much memory
                    status = "error" if isinstance(hoard, HiddenDisk) else "failed"  # whose, unknown: never a failure
                    self.results.put(Outcome(check, status, _cut(f"a fresh worker's import of rover: {hoard}")))
                    if getattr(hoard, "shared", False):
                        self.stopped_by = f"the run stopped at {check.id}: {hoard}"
                    continue
                except CheckTimeout as late:  # a spawned worker imports the rover again: on a busy machine, slowly
                    said = BUSY if late.kind == "busy" else "no worker to run it: a fresh worker did not answer in time"
                    self.results.put(Outcome(check, "error", said))
                    continue
                self.results.put(self._judge(check, worker))
                if worker.spoiled:  # stopped, and its folder removed, by _judge
                    worker = None
        except Stopped:
            return
        finally:
            if worker:
                worker.stop()

    def _worker(self) -> Worker:
        """A fresh worker from the zygote (forked with the student's rover imported, or spawned: grader.boundary.starting)."""
        worker = Worker(self.folder, self.zygote, self.stopping)
        self.workers.append(worker)
        try:
            worker.start(IMPORT_LIMIT, self.stopping)
        except BaseException:
            worker.discard()  # what its import wrote counts no more
            raise
        return worker

    def _judge(self, check: Check, worker: Worker) -> Outcome:
        tmp, temp = self.folder.pinned("check"), self.folder.pinned("temp")
        started = time.monotonic()
        clock = worker.clock(self.time_limit).watching(self.folder.disk, mine := (tmp.path.name, temp.path.name, worker.scratch.name), self.folder.memory)
        lab = Lab(self.workspace, tmp, worker, clock, self.stopping, temp=temp)
        verdict, message = None, ""
        with self.folder.disk.claim(mine):  # until its folders are gone: no other clock ever sees them unclaimed
            try:
                try:
                    self.registry[check.id](lab)
                except CheckFailed:
                    clock.last_look()  # a flood the looks missed is the truer cause of a failure too
                    raise
                clock.last_look()
                status, message = "passed", ""
            except CheckFailed as failure:
                status, message = "failed", str(failure)
            except StudentCrashed as crash:
                status, message = "error", str(crash)
            except CheckTimeout as late:
                status, message = ("error", BUSY) if late.kind == "busy" else ("timeout", self._late(late, worker))
            except HiddenDisk as lost:  # not known to be this code's: an error, and the run stops
                status, message, verdict = "error", str(lost), lost
                self.stopped_by = f"the run stopped at {check.id}: {lost}"
            except MemoryExceeded as hoard:  # memory, processes, or the run folder's size (DiskExceeded)
                status, message = "failed", str(hoard)
                if getattr(hoard, "shared", False):  # filled where no one check answers (HOME): every check would meet it
                    self.stopped_by = f"the run stopped at {check.id}: {hoard}"
            except WorkerLost as lost:
                status, message = "error", str(lost)
            except Exception as confusion:  # the check choked on what the code answered: the code's fault, said plainly
                status, message = "error", f"the answer made no sense to the check ({type(confusion).__name__}: {confusion})"
            finally:
                if not (message == BUSY or isinstance(verdict, HiddenDisk) or worker.machine_fault):
                    message = own_words(message)  # the machine's faults are the grader's to name, never the code's
                self.folder.memory.forget(clock)  # however it ended, its tree no longer counts in the run's
                lab.close()
                for folder in (tmp.path, temp.path):  # removed while still claimed: never seen as no one's
                    remove_tree(folder)
                    self.folder.disk.gone(folder.name)
                if worker.spoiled:  # it serves no other check: what it left in its working folder counts no more
                    worker.discard()
        return Outcome(check, status, _cut(message), time.monotonic() - started)

    def _late(self, late: CheckTimeout, worker: Worker) -> str:
        """Why the clock ran out, naming the student's line, or the command the code started and waited on."""
        budget = f"{self.time_limit:g} s"
        if late.kind == "cpu" and late.waiting_on:
            return f"a command ran too long: `{late.waiting_on}` was still computing after {budget} of CPU; does it ever end?"
        if late.kind == "wait" and late.waiting_on:
            return f"still waiting after {budget} on the command `{late.waiting_on}`: does it wait for input, or never end?"
        where = worker.stuck_at()
        if late.kind == "lowered":
            return (f"still running after {budget} at a priority the code lowered itself (nice, SCHED_IDLE)"
                    f"{', at ' + where if where else ''}: is there an endless loop?")
        if late.kind == "cpu":
            return f"still running after {budget} of CPU{', at ' + where if where else ''}: is there an endless loop?"
        if late.kind == "crowded":
            return (f"still running after {clocks.BACKSTOP * clocks.CROWDED * self.time_limit:g} s{', at ' + where if where else ''}, sharing the "
                    f"cores with your other checks ({late.cpu:.1f} s of CPU of its own): is there an endless loop?")
        return f"still waiting after {budget}{', at ' + where if where else ''}: is there a call that waits forever (a sleep, a read)?"


def _import_error(answer: dict) -> str:
    if "bad" in answer:
        return str(answer["bad"])
    raised = answer["raised"] if isinstance(answer.get("raised"), dict) else {}
    where = f" in {raised.get('where')}" if raised.get("where") else ""
    return f"{raised.get('type')}{where}: {raised.get('message')}"


def own_words(text: str) -> str:
    """Text that quotes the student's code (an exception's message, an answer) with the grader's words for the machine's
    faults defused: a code that raises "the machine was too busy" is not graded as if it were (a no-break space in
    each phrase reads the same and matches none)."""
    for phrase in MACHINE_PHRASES:
        text = text.replace(phrase, phrase.replace(" ", "\u00a0"))
    return text


def _cut(message: str) -> str:
    message = str(message)
    return message if len(message) <= MESSAGE_LIMIT else message[: MESSAGE_LIMIT - 30] + f"... ({len(message)} characters in all)"


class _terminate_as_exit:
    """SIGTERM (an outer `timeout`, a CI runner) raises SystemExit(143) in the main thread, so the run is still cleaned up."""

    def __enter__(self) -> None:
        self.previous = _install(signal.SIGTERM, _exit_on_term)

    def __exit__(self, *exc: object) -> None:
        _install(signal.SIGTERM, self.previous)


class _sigint_ignored:
    """A second Ctrl-C must not cut the cleanup short."""

    def __enter__(self) -> None:
        self.previous = _install(signal.SIGINT, signal.SIG_IGN)

    def __exit__(self, *exc: object) -> None:
        _install(signal.SIGINT, self.previous)


def _exit_on_term(number, frame) -> None:
    raise SystemExit(128 + signal.SIGTERM)


def _install(number: int, handler):
    if handler is None or threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(number, handler)
