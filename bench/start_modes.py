"""`workshop check` on a solved workspace with workers forked (Linux's default) and spawned (macOS's), side by side.

    python bench/start_modes.py [--runs 5] [--lesson 8] [--extras-off]

Runs alternate between the modes, so a change in the machine's load falls on both alike. Prints, per mode, the
median wall time (min, max) and the median CPU seconds of the whole grading (grader and student's side), with the
load average before and after: spawning costs each worker an interpreter start and its own import of the rover.
`--extras-off` grades as macOS would look (the process sandbox, WORKSHOP_LINUX_EXTRAS=0) in both modes.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from grader.course.render import render

MODES = ("fork", "spawn")


def one_check(workspace: Path, env: dict[str, str]) -> tuple[float, float, list[str]]:
    """Wall seconds, CPU seconds (the grader and every process it waited for) and the checks that did not pass."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "grader.cli", "check", "--json"], cwd=workspace, capture_output=True,
                          env={**os.environ, **env}, timeout=600)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    report = json.loads(done.stdout)
    missed = [f"{entry['id']} {entry['status']}: {entry['message'][:90]}" for entry in report["checks"] if entry["status"] != "passed"]
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, missed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--lesson", type=int, default=8)
    parser.add_argument("--extras-off", action="store_true")
    args = parser.parse_args()
    side = {"WORKSHOP_SANDBOX": "process", "WORKSHOP_LINUX_EXTRAS": "0"} if args.extras_off else {}
    figures: dict[str, list[tuple[float, float, list[str]]]] = {mode: [] for mode in MODES}
    with tempfile.TemporaryDirectory() as scratch:
        workspace = render(args.lesson, Path(scratch) / "ws", True)
        load = os.getloadavg()
        for _ in range(args.runs):
            for mode in MODES:
                figures[mode].append(one_check(workspace, {**side, "WORKSHOP_WORKER_START": mode}))
        after = os.getloadavg()
    print(f"workshop check, solved lesson-{args.lesson}{' (extras off, process sandbox)' if args.extras_off else ''}, "
          f"{args.runs} runs a mode; load average {load[0]:.1f} before, {after[0]:.1f} after, {os.cpu_count()} cores")
    for mode in MODES:
        walls, cpus = [wall for wall, _, _ in figures[mode]], [cpu for _, cpu, _ in figures[mode]]
        missed = [miss for _, _, misses in figures[mode] for miss in misses]
        passed = sum(not misses for _, _, misses in figures[mode])
        print(f"  {mode:5}: median {statistics.median(walls):.2f} s (min {min(walls):.2f}, max {max(walls):.2f}), "
              f"CPU median {statistics.median(cpus):.2f} s, all checks passed in {passed}/{args.runs}")
        for miss in sorted(set(missed))[:6]:
            print(f"         not passed: {miss}")


if __name__ == "__main__":
    main()
