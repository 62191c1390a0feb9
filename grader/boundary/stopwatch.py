"""Timing a span of a check (a tool call, a wait for a process to end) fairly on a busy machine.

Some checks must keep a wall-clock limit: a 1-second timeout should come back in about a second. On a busy machine
the student's code can come back late without being slow itself: its processes sat in a run queue waiting for a CPU.
A Lap says how long the span took and how much of that the machine held the work back (the run-queue waits of the
student's process tree and of the grader's own thread, Linux's schedstat). Late by more than the machine explains
is the code's; late only because of the machine is TooBusy: status error, "run it again", never a failure.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass

from grader.boundary import clocks, processes
from grader.boundary.clocks import CheckTimeout


class TooBusy(CheckTimeout):
    """The check's timing came out late only because the machine held the code back: not the code's fault."""

    def __init__(self) -> None:
        super().__init__("busy")


@dataclass(frozen=True)
class Lap:
    wall: float  # seconds, by the wall clock
    held: float | None  # seconds of it the work waited for a CPU; None where the system does not say

    @property
    def own(self) -> float:
        """The seconds the work took of its own: the wall time less the machine's holding it back."""
        return self.wall - (self.held or 0.0)

    def late(self, limit: float) -> bool:
        """Did the work take `limit` seconds or more of its own? TooBusy if it came that late only because of the
        machine. Where the system does not say how long it held the work back, a machine with more runnable work than
        cores (its load average) is taken as the cause of a lap late by less than the backstop (clocks.BACKSTOP)."""
        if self.wall < limit:
            return False
        if self.held is None:
            if _overloaded() and self.wall < limit * clocks.BACKSTOP:
                raise TooBusy()
            return True
        if self.own < limit:
            raise TooBusy()
        return True

    def excuse(self, seconds: float) -> None:
        """TooBusy if the machine held the work back for `seconds` or more (where the system does not say: if it is
        overloaded): what the code had to do within that time, it may never have had a CPU to do."""
        if (self.held >= seconds) if self.held is not None else _overloaded():
            raise TooBusy()


class Stopwatch:
    """Started at once; each lap() measures from the start. Lap it in the thread that started it (its run-queue wait
    is that thread's own)."""

    def __init__(self, clock=None):
        self.clock = clock  # the check's Clock on the student's tree (None in process: no tree apart from ours)
        self.started = time.monotonic()
        self._tree = clock.waited() if clock is not None else 0.0
        self._own = processes.thread_wait()

    def lap(self) -> Lap:
        wall = time.monotonic() - self.started
        tree = self.clock.waited() if self.clock is not None else 0.0
        own = processes.thread_wait()
        if None in (tree, self._tree, own, self._own):
            return Lap(wall, None)
        return Lap(wall, (tree - self._tree) + (own - self._own))


def _overloaded() -> bool:
    try:
        return os.getloadavg()[0] > (os.cpu_count() or 1)
    except (AttributeError, OSError):
        return False
