"""How long `workshop check` takes, as a student runs it: wall and CPU seconds, median over repeated runs; and how soon
`workshop watch` shows the current lesson's verdict after a save.

    python bench/check_speed.py [--runs 5] [--lesson 8 ...] [--watch] [--against DIR]

Prints one line per workspace (each lesson's stub, and solved) with the median, min and max wall time and the median CPU
seconds of the whole run: the grader and every process of the student's side, counted by a cgroup of its own where
the machine lets us make one (CpuCount), else by getrusage, which misses most of the sandbox's processes.
`--watch`: for lessons 0-4, the time from a save to the current lesson's verdict (the grading of that lesson's own
checks, which watch does first, plus half the interval at which it looks for a save; the second and later saves, as
watch carries the scenarios' test records from one to the next). `--against DIR`: each solved workspace graded by this
kit and by the one checked out in DIR, a run each in turn, the wall ratio taken pair by pair.
A plain check keeps the scenarios' test runs for the next check of the workspace (grader.grading.replays): the
median is of checks that replay them, and the first run's figures are printed beside it.
Baseline (issue 26, two cores, load 5-6): a solved lesson-8 check 6.9-7.4 s wall, about 11 CPU s; target 2.5 s and
half the CPU; watch's verdict within 1 s for lessons 0-4.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from grader.course import kit
from grader.course.render import render


CPUACCT = Path("/sys/fs/cgroup/cpuacct")  # cgroup v1's CPU accounting, where the machine has it and we may use it


class CpuCount:
    """CPU seconds of every process a command starts, the sandbox's too: a cgroup v1 cpuacct group of its own where
    this user may make one (root, mostly), else getrusage CHILDREN, which misses the sandbox's processes that its own
    init reaps (on this machine about two thirds of a lesson-8 check)."""

    def __init__(self) -> None:
        self.group: Path | None = None
        try:
            group = CPUACCT / f"check-speed-{os.getpid()}"
            group.mkdir()
            self.group = group
        except OSError:
            pass
        self.how = "cgroup cpuacct" if self.group else "getrusage, which misses the sandbox's processes"

    def run(self, command: list[str], cwd: Path, env: dict | None = None) -> float:
        join = (lambda: (self.group / "cgroup.procs").write_text(str(os.getpid()))) if self.group else None
        before = self._used()
        subprocess.run(command, cwd=cwd, capture_output=True, preexec_fn=join, env=env)
        return self._used() - before

    def _used(self) -> float:
        if self.group:
            return int((self.group / "cpuacct.usage").read_text()) / 1e9
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    def close(self) -> None:
        if self.group:
            with contextlib.suppress(OSError):
                self.group.rmdir()


def time_check(workspace: Path, runs: int, count: CpuCount, kit_path: str | None = None) -> tuple[list[float], list[float]]:
    """`kit_path`: grade with the kit checked out there (PYTHONPATH) rather than this one."""
    walls, cpus = [], []
    env = {**os.environ, "PYTHONPATH": kit_path} if kit_path else None
    for _ in range(runs):
        started = time.perf_counter()
        cpus.append(count.run([sys.executable, "-m", "grader.cli", "check", "--json"], workspace, env))
        walls.append(time.perf_counter() - started)
    return walls, cpus


def time_against(workspace: Path, runs: int, count: CpuCount, other: str) -> str:
    """This kit and the one checked out at `other`, a run each in turn (ABAB...), so the machine's drift falls on both."""
    ours, theirs = ([], []), ([], [])
    for _ in range(runs):
        for found, kit_path in ((ours, str(Path(__file__).resolve().parents[1])), (theirs, other)):
            walls, cpus = time_check(workspace, 1, count, kit_path)
            found[0].extend(walls)
            found[1].extend(cpus)
    ratio = statistics.median(a / b for a, b in zip(ours[0], theirs[0]))
    return (f"median {statistics.median(ours[0]):.2f} s wall, {statistics.median(ours[1]):.1f} CPU s; {other}: "
            f"{statistics.median(theirs[0]):.2f} s wall, {statistics.median(theirs[1]):.1f} CPU s; wall ratio, pair by pair, "
            f"{ratio:.2f} ({runs} pairs)")


def time_watch(workspace: Path, lesson: int, runs: int) -> list[float]:
    """The first stage of `workshop watch`: the lesson's own checks, in-process as watch runs them."""
    from grader.commands.watch import watch
    from grader.course.workspace import Workspace
    from grader.grading.grade import grade

    interval = watch.__defaults__[0]
    found, records = [], {}
    for _ in range(runs):
        started = time.perf_counter()
        grade(Workspace(workspace, lesson), only=lesson, replays=records)
        found.append(time.perf_counter() - started + interval / 2)
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--lesson", type=int, action="append", help="lesson(s) to time (default: 1 and the last)")
    parser.add_argument("--watch", action="store_true", help="also time watch's first verdict for lessons 0-4")
    parser.add_argument("--against", metavar="DIR", help="another checkout of the kit (git worktree add DIR REV): its "
                        "check of each solved workspace, in turn with this one's")
    args = parser.parse_args()
    lessons = args.lesson or sorted({1, len(kit.lessons()) - 1})
    count = CpuCount()
    print(f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} before; CPU seconds by {count.how}")
    with tempfile.TemporaryDirectory() as scratch, contextlib.closing(count):
        os.environ["WORKSHOP_CACHE"] = str(Path(scratch) / "cache")
        for lesson in lessons:
            for solved in (False, True):
                workspace = render(lesson, Path(scratch) / f"ws-{lesson}-{solved}", solved)
                walls, cpus = time_check(workspace, args.runs, count)
                label = f"lesson-{lesson} {'solved' if solved else 'stub  '}"
                print(f"workshop check, {label}: median {statistics.median(walls):.2f} s wall (min {min(walls):.2f}, "
                      f"max {max(walls):.2f}), {statistics.median(cpus):.1f} CPU s, {args.runs} runs, "
                      f"{len([c for n in range(lesson + 1) for c in kit.lesson(n).checks])} checks; the first, with no test "
                      f"runs kept yet: {walls[0]:.2f} s, {cpus[0]:.1f} CPU s")
                if solved and args.against:
                    print(f"  against {args.against}: {time_against(workspace, args.runs, count, args.against)}")
        if args.watch:
            for lesson in range(5):
                workspace = render(lesson, Path(scratch) / f"watch-{lesson}", True)
                found = time_watch(workspace, lesson, args.runs)
                print(f"workshop watch, lesson-{lesson} solved: its own {len(kit.lesson(lesson).checks)} checks' verdict "
                      f"{statistics.median(found):.2f} s after a save (median; min {min(found):.2f}, max {max(found):.2f})")
    print(f"load {os.getloadavg()[0]:.1f} after")


if __name__ == "__main__":
    main()
