"""Grading a class at once against grading it one `workshop check` at a time, side by side in one run.

    python bench/bulk_grade.py [--count 60] [--jobs N]

Renders COUNT workspaces (every lesson, stub and solved, in turn), then times (1) a `workshop check --json`
in each, one after another, and (2) one `workshop class grade` over all of them, which grades each student by
a `workshop check --json` process of its own on a private copy, in the sandbox. The baseline is (1) divided
over the cores, as if the single checks ran perfectly in parallel; the target is bulk <= 1.2x that baseline.
CPU figures are every process's, waited-for children included (class grade waits for each grading process).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from grader.course import kit
from grader.course.render import render

TARGET = 1.2


def make_class(folder: Path, count: int) -> list[Path]:
    kinds = [(lesson.number, solved) for lesson in kit.lessons() for solved in (False, True)]
    originals = {kind: render(kind[0], folder / "originals" / f"lesson{kind[0]}-{kind[1]}", kind[1]) for kind in kinds}
    students = []
    for index in range(count):
        target = folder / "class" / f"student-{index:02d}"
        shutil.copytree(originals[kinds[index % len(kinds)]], target)
        students.append(target)
    shutil.rmtree(folder / "originals")
    return students


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_singles(students: list[Path], env: dict) -> tuple[float, float]:
    """Wall time and CPU time (every process, workers included) of one `workshop check` per workspace."""
    started, cpu = time.perf_counter(), _cpu()
    for student in students:
        subprocess.run([sys.executable, "-m", "grader.cli", "check", "--json"], cwd=student, env=env, capture_output=True, check=False)
    return time.perf_counter() - started, _cpu() - cpu


def time_bulk(folder: Path, jobs: int | None, env: dict, unsafe: bool) -> tuple[float, float, dict]:
    report = folder / "class.json"
    command = [sys.executable, "-m", "grader.cli", "class", "grade", str(folder / "class"), "--json", str(report)]
    command += ["--unsafe-no-sandbox"] if unsafe else []
    started, cpu = time.perf_counter(), _cpu()
    subprocess.run(command + (["--jobs", str(jobs)] if jobs else []), env=env, capture_output=True, check=False)
    return time.perf_counter() - started, _cpu() - cpu, json.loads(report.read_text())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=60)
    parser.add_argument("--jobs", type=int, help="passed to `class grade --jobs` (default: its own, one per core)")
    parser.add_argument("--unsafe-no-sandbox", dest="unsafe", action="store_true", help="where no sandbox can run")
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory(prefix="workshop-bench-") as scratch:
        folder = Path(scratch)
        students = make_class(folder, args.count)
        (folder / "tmp").mkdir()
        env = {**os.environ, "TMPDIR": str(folder / "tmp")}  # whatever the checks spill goes when the bench ends
        singles, singles_cpu = time_singles(students, env)
        bulk, bulk_cpu, report = time_bulk(folder, args.jobs, env, args.unsafe)
    graded = sum(student["grade"] is not None for student in report["students"])
    checks = sum(len(student["grade"]["checks"]) for student in report["students"] if student["grade"])
    baseline = singles / cores
    print(f"{args.count} workspaces ({checks} checks), {cores} cores")
    print(f"  {args.count} single `workshop check` runs, one after another: {singles:.1f} s "
          f"({singles / args.count:.2f} s each, {singles_cpu:.1f} s CPU); over {cores} cores: {baseline:.1f} s")
    print(f"  one `workshop class grade` over all of them: {bulk:.1f} s ({bulk_cpu:.1f} s CPU, {graded} graded, "
          f"sandbox: {report['sandbox']})")
    busy = sum(1 for student in report["students"] if student["grade"]
               for check in student["grade"]["checks"] if check["status"] in ("timeout", "error"))
    print(f"  checks that timed out or could not finish in the bulk run: {busy} (a loaded machine shows here)")
    print(f"  bulk / (singles over cores) = {bulk / baseline:.2f}x (target <= {TARGET}x): "
          f"{'met' if bulk <= TARGET * baseline else 'NOT met'}")


if __name__ == "__main__":
    main()
