"""Who gets a seat on the board: the roster, the instructor's approval, and limits on joins per address and class.

One seat is one relay budget, so a seat is worth taking more than one of: a roster (`--roster FILE`, one
name a line) admits only its names, `--approve` holds every other join until the instructor approves it
on the board, each address may try only a few joins a minute and a few more an hour, and the whole class
only so many a minute (many addresses are no way around it). Past the expected class size (`--class-size`,
or the roster's length), a new seat waits for the instructor's approval: 100 addresses no longer take 500
seats in half a minute.
"""
from __future__ import annotations

import threading
import time
from collections import deque
from pathlib import Path

from grader.classroom.payloads import Join, normal_name
from grader.classroom.refusals import Refused
from grader.classroom.store import ClassFull, NameTaken, Store, Student

JOINS_PER_MINUTE = 6  # per address: enough for typos and rejoins, far too few to fill a class
JOINS_PER_HOUR = 20  # per address: 500 seats would take a day from one machine, not an hour and a half
CLASS_JOINS_PER_MINUTE = 120  # the whole class: a room of 100 joins at once, a crowd of addresses waits
CLASS_SIZE = 60  # seats taken without approval when the instructor names no size and no roster


def read_roster(path: Path) -> dict[str, str]:
    """The roster's names by their case-folded form; ValueError naming the line when a name could not be a seat."""
    names: dict[str, str] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8-sig").splitlines(), 1):
        name = line.strip()
        if not name or name.startswith("#"):
            continue
        try:
            Join(name=name)
        except ValueError:
            raise ValueError(f"line {number} of {path}: {name[:50]!r} is not a name (1 to 40 printable characters)") from None
        names[normal_name(name).casefold()] = normal_name(name)
    if not names:
        raise ValueError(f"{path} has no names: write one student's name a line")
    return names


class JoinRate:
    """At most `per_minute` joins from one address in any 60 seconds and `per_hour` in any hour (0: no limit)."""

    def __init__(self, per_minute: int = JOINS_PER_MINUTE, per_hour: int | None = None):
        self.per_minute = per_minute
        self.per_hour = (JOINS_PER_HOUR if per_minute else 0) if per_hour is None else per_hour
        self._seen: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def wait_for(self, address: str, now: float | None = None) -> float:
        """Seconds this address must wait before it may join again (0: go ahead, counted)."""
        if not self.per_minute and not self.per_hour:
            return 0.0
        now = time.monotonic() if now is None else now
        with self._lock:
            if len(self._seen) > 10_000:  # many addresses: forget those quiet for an hour
                self._seen = {key: times for key, times in self._seen.items() if times and now - times[-1] < 3600}
            times = self._seen.setdefault(address, deque())
            while times and now - times[0] >= 3600:
                times.popleft()
            last_minute = [at for at in times if now - at < 60]
            if self.per_minute and len(last_minute) >= self.per_minute:
                return 60 - (now - last_minute[-self.per_minute])
            if self.per_hour and len(times) >= self.per_hour:
                return 3600 - (now - times[-self.per_hour])
            times.append(now)
            return 0.0


class Seats:
    def __init__(self, store: Store, roster: dict[str, str] | None = None, approve: bool = False,
                 rate: JoinRate | None = None, tell=None, class_size: int | None = None, class_rate: JoinRate | None = None):
        self.store, self.roster, self.approve = store, roster, approve
        self.rate = rate or JoinRate()
        self.class_rate = class_rate or JoinRate(CLASS_JOINS_PER_MINUTE, per_hour=0)
        self.class_size = class_size or (len(roster) if roster else CLASS_SIZE)
        self.tell = tell or (lambda line: None)  # serve prints these lines (join events) for the instructor

    def join(self, wanted: Join, token: str | None, address: str) -> tuple[Student, str]:
        wait = self.rate.wait_for(address)
        if wait:
            raise Refused(429, f"too many joins from {address}: try again in {wait:.0f} s", headers={"retry-after": str(int(wait) + 1)})
        wait = self.class_rate.wait_for("the class")
        if wait:
            raise Refused(429, f"too many joins to this class this minute: try again in {wait:.0f} s",
                          headers={"retry-after": str(int(wait) + 1)})
        name, pending = wanted.name, self.approve
        if self.roster is not None:
            listed = self.roster.get(name.casefold())  # the name is normalised already (Join)
            if listed is None and not self.approve:
                raise Refused(403, f"{name!r} is not on this class's roster: join with your name as the instructor has it")
            name, pending = (listed, False) if listed else (name, True)
        try:
            listed = self.roster is not None and not pending  # a roster's own name is never held for the count
            student, token = self.store.join(name, token, wanted.workspace, pending=pending,
                                             pending_past=None if listed else self.class_size)
        except NameTaken:
            if self.roster is not None and not pending:
                raise Refused(409, f"{name!r} on the roster already has a seat, joined from another workspace: if that was not you, "
                                   f"ask the instructor to free it (workshop class students remove {name!r}, or Remove on the board), "
                                   "then join again") from None
            raise Refused(409, f"the name {name!r} is taken on this board: join from the workspace you joined with, or with "
                               "another --name (the instructor can free a seat: workshop class students remove NAME)") from None
        except ClassFull as full:
            raise Refused(403, f"{full}; ask the instructor") from None
        self.tell(f"{student.name} is waiting for your approval (on the board)" if student.pending else f"{student.name} joined")
        return student, token
