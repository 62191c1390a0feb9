"""How long `workshop check` takes, as a student runs it: median wall time over repeated runs.

    python bench/check_speed.py [--runs 9] [--lesson 1]

Prints one line per workspace (the lesson's stub, and solved), with median, min and max.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from grader.course import kit
from grader.course.render import render


def time_check(workspace: Path, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "grader.cli", "check", "--json"], cwd=workspace, capture_output=True)
        times.append(time.perf_counter() - started)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--lesson", type=int, action="append", help="lesson(s) to time (default: 1 and the last)")
    args = parser.parse_args()
    lessons = args.lesson or sorted({1, len(kit.lessons()) - 1})
    with tempfile.TemporaryDirectory() as scratch:
        for lesson in lessons:
            for solved in (False, True):
                workspace = render(lesson, Path(scratch) / f"ws-{lesson}-{solved}", solved)
                times = time_check(workspace, args.runs)
                label = f"lesson-{lesson} {'solved' if solved else 'stub  '}"
                print(f"workshop check, {label}: median {statistics.median(times):.2f}s "
                      f"(min {min(times):.2f}s, max {max(times):.2f}s, {args.runs} runs, "
                      f"{len([c for n in range(lesson + 1) for c in kit.lesson(n).checks])} checks)")


if __name__ == "__main__":
    main()
