"""A check's clock: CPU seconds of the student's process tree, with a wall-clock backstop several times longer.

A busy machine slows the student's code down without it spending more CPU, so the budget is CPU, not wall time.
Three ways a clock runs out, each a CheckTimeout with its `kind`:
  cpu    the tree spent its whole CPU budget: an endless loop, or a command that computes too long;
  wait   past the budget in wall time, the tree has been asleep for a while (not one tick of CPU, nothing runnable
         at any look; a starved tree on a busy machine still gets ticks): it waits forever;
  busy   the backstop: the tree kept wanting a CPU and other programs took it (not the student's fault);
  crowded  past the backstop, the tree kept wanting a CPU and the run's own processes (the student's other checks) held
         the cores: the student's load. The clock waits on (up to CROWDED backstops) for the tree's CPU budget, so a
         looping tool hit by every check at once ends as `cpu`, naming its line; `crowded` only if even that is late.
The tree is measured every POLL seconds, which also bounds its memory (MemoryExceeded, over all its processes),
the run folder's size (DiskExceeded, grader.boundary.folder_caps) and what the machine holds for no process
(HiddenDisk, HiddenMemory: grader.boundary.hidden_memory).
"""
from __future__ import annotations

import os
import time
from typing import Callable

from grader.boundary import processes

BACKSTOP = float(os.environ.get("WORKSHOP_BACKSTOP", 4.0))  # the wall-clock backstop, in budgets (raise it on a slow CI runner)
POLL = 0.25  # seconds between two looks at the tree
IDLE = 5.0  # seconds without one tick of CPU and without a runnable process that make a tree past its budget one that waits
TREE_MEMORY = int(os.environ.get("WORKSHOP_WORKER_MEMORY", 1 << 30))  # bytes for all of a worker's processes together
RUN_MEMORY = 2 * TREE_MEMORY  # bytes all the trees of a run may hold together (8 lanes at once: not 8 times a tree's)
TREE_PROCESSES = 200  # processes a worker's tree may hold at once (RLIMIT_NPROC does not bind root, nor count a tree)
CROWDED = 3.0  # past the backstop, a tree crowded by the run's own processes waits this many backstops for its CPU budget
WANTED = 0.5  # at the backstop, a tree whose CPU time plus run-queue wait is under this share of the wall time was asleep


class CheckTimeout(BaseException):
    """The check's clock ran out while the student's code was busy; `kind` is cpu, wait, busy or lowered (its own priority)."""

    def __init__(self, kind: str = "cpu", cpu: float = 0.0, waiting_on: str = ""):
        super().__init__(kind)
        self.kind, self.cpu, self.waiting_on = kind, cpu, waiting_on


class MemoryExceeded(BaseException):
    """The student's processes together passed the memory limit (or the process limit); they have been killed."""


class TooManyProcesses(MemoryExceeded):
    """The student's tree held more processes at once than it may; they have been killed."""


class DiskExceeded(MemoryExceeded):
    """The student's files in the run folder passed its cap (bytes or entries); their processes have been killed.
    `shared`: the overflow is in no one check's folders (HOME, TMPDIR), so the whole run must stop."""

    def __init__(self, message: str, shared: bool = False):
        super().__init__(message)
        self.shared = shared


class HiddenDisk(DiskExceeded):
    """The file system lost far more than the run folder holds: the whole run stops, an error (whose files, unknown)."""

    def __init__(self, message: str):
        super().__init__(message, shared=True)


class HiddenMemory(HiddenDisk):
    """The machine's kernel-held memory grew far past what is allowed (grader.boundary.hidden_memory): the same end."""


class Clock:
    disk = None  # the run folder's watch (grader.boundary.folder_caps), once `watching` is called
    memory = None  # the machine's witness (grader.boundary.hidden_memory), once `watching` is called
    mine: frozenset = frozenset()

    def __init__(self, budget: float, tree: Callable[[], list] | None = None, limit: int = TREE_MEMORY, own: tuple[int, ...] = (),
                 side: Callable[[], float] | None = None):
        self.budget, self.tree, self.limit = budget, tree, limit
        self.side = side  # CPU seconds of the student's whole side (every check's tree): whose load the machine carried
        self._machine: tuple[float, float] | None = None  # once past the budget: the machine's busy CPU and the side's
        self.own = set(own)  # the grader's keeper and the worker proper: what is not a command the code started
        self.started = time.monotonic()
        self._base: float | None = None
        self._active = self.started  # the last look that saw the tree use CPU or want it
        self._looked = self.started  # the last look at the tree
        self._cpu = -1.0
        self._next = self.started + POLL
        self._seen: dict[int, float] | None = None  # from begin(): each process's run-queue wait at the last look (Linux)
        self._run_waited: float | None = None  # from begin(): the run-queue waits the tree added up since (Linux)
        self._on_grader = 0.0  # seconds the tree waited on the grader's own work (a request, a model's reply) since begin()

    @classmethod
    def wall(cls, seconds: float) -> Clock:
        """A plain wall-clock deadline (for the grader's own waits, where no student tree is measured)."""
        return cls(seconds)

    def begin(self) -> Clock:
        """Take the tree's CPU so far as this clock's zero (a worker serves several checks)."""
        self.started = time.monotonic()
        self._next = self.started + POLL
        procs = self.tree() if self.tree else []
        self._base = processes.cpu(procs) if self.tree else 0.0  # its CPU only: usage() would walk every mapping too
        if self.tree:
            self._seen, self._run_waited = {}, 0.0
            self._count_waits(procs, baseline=True)
        self._looked, self._on_grader = self.started, 0.0
        return self

    def waiting(self) -> Clock:
        """The grader hands the worker something new (a request, a model's reply): idleness is judged within one wait,
        never across the grader's own work, and the time since the last look was the tree waiting on the grader."""
        now = time.monotonic()
        self._on_grader += max(0.0, now - self._looked)
        self._active = self._looked = now
        return self

    def left(self) -> float:
        """Seconds until the next look (for select's timeout)."""
        return max(0.0, min(POLL, self._next - time.monotonic()))

    def check(self) -> None:
        now = time.monotonic()
        if now < self._next:
            return
        self._next = now + POLL
        wall = now - self.started
        if self.tree is None:
            if wall > self.budget:
                raise CheckTimeout("wait")
            return
        procs = self.tree()
        if len(procs) > TREE_PROCESSES:
            processes.kill_tree([procs[0].pid])  # the tree's root (listed first): one sweep of its tree, not one per process
            raise TooManyProcesses(f"the code had over {TREE_PROCESSES} processes running at once ({len(procs)} seen), so all of "
                                   "them were stopped: a fork bomb, or commands started in a loop and never waited for?")
        used = processes.usage(procs)
        if used.memory > self.limit:
            processes.kill_tree([proc.pid for proc in procs])
            raise MemoryExceeded(f"the code's {used.processes} process(es) held {used.memory / (1 << 20):,.0f} MB together, "
                                 f"over the {self.limit / (1 << 20):,.0f} MB all of them may use: memory is counted over every "
                                 "process the code starts (forks included)")
        together = self.memory.together(self, used.memory, RUN_MEMORY, 2 * POLL + 0.5) if self.memory is not None else None
        if together:
            processes.kill_tree([proc.pid for proc in procs])
            raise MemoryExceeded(together)
        self._check_room(procs)
        cpu = used.cpu - (self._base or 0.0)
        if cpu > self.budget:
            raise CheckTimeout("cpu", cpu, _busiest(procs, self.own))
        if cpu > self._cpu or processes.runnable(procs):
            self._active = now
        elif now - self._looked > 2 * POLL:  # the grader itself was held back: it saw the tree idle for one look, not the gap
            self._active += now - self._looked - POLL
        self._cpu, self._looked = cpu, now
        if self._seen is not None:
            self._count_waits(procs)
        if wall > self.budget and now - self._active >= min(IDLE, self.budget):
            raise CheckTimeout("wait", cpu, _waiting_on(procs, self.own))
        if wall > self.budget and self.side and self._machine is None:  # only a late check pays to ask whose load
            self._machine = (processes.machine_busy(), self.side())
        if wall > self.budget * BACKSTOP:
            kind = self._starved_or_asleep(procs, cpu, wall)
            if kind == "crowded" and wall < self.budget * BACKSTOP * CROWDED:
                return  # its own siblings hold the cores: it still gets its share, and its CPU budget will end it
            raise CheckTimeout(kind, cpu, _waiting_on(procs, self.own))

    def watching(self, disk, mine=(), memory=None) -> Clock:
        """Also bound the run folder's size at each look; `mine`: the top-level folders this clock's check answers for;
        `memory`: the run's witness of memory no process holds."""
        self.disk, self.mine, self.memory = disk, frozenset(mine), memory
        return self

    def last_look(self) -> None:
        """The code's part is over (the import, a check): its files are measured once more, so a flood written and
        finished between two looks (a fast run may have none) is still caught."""
        if self.memory is not None:
            self.memory.forget(self)
        if self.disk is not None or self.memory is not None:
            self._check_room(self.tree() if self.tree else [], fresh=True)

    def _check_room(self, procs: list, fresh: bool = False) -> None:
        """The run folder's caps, then the last witnesses: the disk's free space and the machine's memory."""
        over = self.disk.over(procs, self.mine, fresh) if self.disk is not None else None
        if over:  # first: files the walk sees are named, and their owner's alone
            processes.kill_tree([proc.pid for proc in procs])
            raise DiskExceeded(*over)
        for witness, stop in ((self.disk, HiddenDisk), (self.memory, HiddenMemory)):
            hidden = witness.hidden() if witness is not None else None
            if hidden:
                processes.kill_tree([proc.pid for proc in procs])
                raise stop(hidden)

    def waited(self) -> float | None:
        """Seconds the tree's processes have waited in a run queue for a CPU since begin() (Linux; None elsewhere): how
        long the machine held the code back. Every look at the tree adds to it, so a command that ended between two
        looks still counts up to the last look that saw it."""
        if self.tree is None or self._seen is None:
            return None
        self._count_waits(self.tree())
        return self._run_waited

    def _count_waits(self, procs: list, baseline: bool = False) -> None:
        waits = processes.run_wait(procs)
        if waits is None:  # the system does not say (or, once it has, the processes were gone before it could)
            self._run_waited = self._run_waited if self._seen else None
            return
        for pid, seconds in waits.items():
            if self._run_waited is not None and not baseline:
                self._run_waited += max(0.0, seconds - self._seen.get(pid, 0.0))
            self._seen[pid] = seconds

    def _starved_or_asleep(self, procs: list, cpu: float, wall: float) -> str:
        """At the backstop: `busy` if the tree really waited for a CPU or for the grader (its CPU time, the run-queue
        waits of its processes, those that have ended included, and the time it waited on the grader's own work fill
        much of the wall time), `wait` if it mostly slept (a tool that wakes for a moment now and then, forever).
        Where the system does not tell the run-queue wait (not Linux), it is `busy`, as before."""
        if processes.lowered(procs):  # its run-queue waits are its own doing: no busy machine to blame
            return "lowered"
        if self._run_waited is not None and cpu + self._run_waited + self._on_grader < WANTED * wall:
            return "wait"
        return "crowded" if self._crowded_by_the_run(wall) else "busy"

    def _crowded_by_the_run(self, wall: float) -> bool:
        """Did the run's own processes (the student's code in every lane) take more of the cores than all other programs
        together? The machine's busy CPU since the check passed its budget, less the side's, is what the rest took."""
        if self._machine is None or self.side is None:
            return False
        side = self.side() - self._machine[1]
        others = (processes.machine_busy() - self._machine[0]) - side
        return side >= others


def _busiest(procs: list, own: set[int]) -> str:
    """The command line of the command that used the most CPU, if it used more than the code's own process."""
    def spent(proc) -> float:
        times = proc.cpu_times()
        return times.user + times.system

    started = [proc for proc in procs if proc.pid not in own]
    mine = sum(_quiet(spent, proc) for proc in procs if proc.pid in own)
    return _describe(started, spent) if started and max(_quiet(spent, proc) for proc in started) > mine else ""


def _waiting_on(procs: list, own: set[int]) -> str:
    """The newest command the code started and still waits on."""
    return _describe([proc for proc in procs if proc.pid not in own], lambda proc: proc.create_time())


def _quiet(read, proc) -> float:
    try:
        return read(proc)
    except Exception:
        return 0.0


def _describe(procs: list, key) -> str:
    ranked = [(_quiet(key, proc), proc) for proc in procs]
    if not ranked:
        return ""
    proc = max(ranked, key=lambda pair: pair[0])[1]
    line = processes.command_line(proc)
    return line if len(line) <= 120 else line[:117] + "..."
