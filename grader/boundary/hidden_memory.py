"""Memory the kernel holds for the student's code where no process shows it: the machine's own figures as a last witness.

A process's count (PSS: grader.boundary.processes) sees what the process maps. Socket buffers (a socketpair holds
megabytes its reader never reads) and pipe buffers belong to no process: 128 socketpairs hold 1 GiB that no tree's
count includes. /proc/meminfo does see it, machine-wide: memory in use that is neither a process's anonymous pages
nor the page cache grows by what they hold (measured: 1,051 MiB for 1 GiB of socket buffers, 448 MiB for 448 MiB of
pipes). Shared memory and tmpfs files (Shmem, part of the page cache) are left out: mapped, they are the mapping
tree's (its PSS); unmapped, the sandbox leaves them no place (its /tmp and /dev/shm are folders on disk; memfd, SysV
segments and mounts of one's own are refused); and counted here too, a tree's shared buffer would stop every run
beside it.

Whose it is, the figures cannot say (another program, a classmate's run grading beside this one), so, like the disk's
witness (grader.boundary.folder_caps), a run past it stops as an error, never a failure. It stops when the run has
seen HIDDEN more of it and the machine is running low, or when it has seen CEILING more whatever is left: the harm is
a machine out of memory, and a desktop's own use must not stop a run on a machine with room to spare.
"""
from __future__ import annotations

import os
import threading
import time

from grader.boundary.backends.linux_proc import meminfo

HIDDEN = int(os.environ.get("WORKSHOP_HIDDEN_MEMORY", 1 << 30))  # bytes of kernel-held memory a run may add, on a machine running low
CEILING = 4 * HIDDEN  # ... and on any machine
LOST = "the machine's memory held by no process grew by"  # how the stop begins (class grade grades such a row again)
LOW = 0.1  # a machine is running low once what it has available is under this share of it (or under HIDDEN)
FRESH = 0.2  # seconds one reading of the machine's figures serves every clock of the run


class MemoryWitness:
    """The run's memory beyond one check's tree: the machine's kernel-held memory as the run began and the judgement on
    it at each look, and what every lane's tree held at its last look, together."""

    def __init__(self) -> None:
        found = meminfo()
        self._start = None if found is None else kernel_held(found)
        self._said: str | None = None
        self._at = -FRESH
        self._trees: dict[int, tuple[int, float]] = {}  # a clock's id: what its tree held at its last look, and when
        self._lock = threading.Lock()

    def together(self, clock: object, held: int, limit: int, recent: float) -> str | None:
        """Record what this clock's tree holds; a reason to stop it if the trees of the run, looked at within `recent`
        seconds, hold more than `limit` together and this one holds the most (each hoarder in turn, never a bystander)."""
        now = time.monotonic()
        with self._lock:
            self._trees[id(clock)] = (held, now)
            live = {key: bytes_ for key, (bytes_, at) in self._trees.items() if now - at <= recent}
        total = sum(live.values())
        if total <= limit or max(live, key=live.__getitem__) != id(clock):
            return None
        return (f"the run's checks held {total >> 20:,} MB together ({len(live)} at once), over the {limit >> 20:,} MB a run "
                f"may use, and this one the most ({held >> 20:,} MB)")

    def forget(self, clock: object) -> None:
        """The clock's check is over: its tree counts no more."""
        with self._lock:
            self._trees.pop(id(clock), None)

    def hidden(self) -> str | None:
        """None, unless the kernel holds more than the limits allow beyond what it held as the run began (figures read
        at most every FRESH seconds: every lane's clock asks at each look)."""
        if self._start is None or time.monotonic() - self._at < FRESH:
            return self._said
        found = meminfo()
        self._said, self._at = (None if found is None else self._judge(found)), time.monotonic()
        return self._said

    def _judge(self, found: dict[str, int]) -> str | None:
        lost, available = kernel_held(found) - self._start, found["MemAvailable"]
        low = available < max(HIDDEN, LOW * found["MemTotal"])
        if lost <= HIDDEN or (lost <= CEILING and not low):
            return None
        allowed = f"allowed: {HIDDEN >> 20:,} MB, with {available >> 20:,} MB left" if low else f"allowed: {CEILING >> 20:,} MB"
        return (f"{LOST} {lost >> 20:,} MB during the run ({allowed}): socket or pipe buffers filled and never read, or "
                "another program's; the run was stopped")


def kernel_held(figures: dict[str, int]) -> int:
    """Memory in use that is no process's anonymous memory, no page cache (shared memory and tmpfs files included) and
    no kernel cache the kernel could drop: socket and pipe buffers, unreclaimable kernel objects (bytes)."""
    cache = figures["Buffers"] + figures["Cached"] + figures["SReclaimable"]
    return figures["MemTotal"] - figures["MemFree"] - cache - figures["AnonPages"]
