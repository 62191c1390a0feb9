"""What the boundary costs: a full `workshop check` of a solved lesson-8 workspace beside the floor of its own checks.

    python bench/sandbox.py [--runs 5] [--lesson 8] [--backends bwrap,process] [--against CHECKOUT]

Each backend the machine can run (bubblewrap, the process sandbox) is timed in the same run, side by side;
`--against` times another checkout of the kit too (its grader on PYTHONPATH), interleaved: before and after a change
under the same load, on a machine whose load swings.

The floor is what the checks cost with no sandbox at all: each check run bare, one at a time,
in this process (the student's code imported here once, every call a plain function call),
its wall time and CPU time (this process and its children) taken. floor = max(total CPU /
cores, longest check). The full check is `workshop check --json` as a student runs it, in a
fresh process: interpreter start, imports, workers, sandbox, report. Target (SPEC 9): at most
1.3x the floor. Both are measured in the same run, alternating, so machine load hits both; the
CPU the full check spends beyond its checks' own (startup, workers, sandbox) is printed too,
as it depends far less on the load than wall time does.
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
from grader.grading import checks
from grader.grading.grade import checks_up_to


def bare_checks(workspace: Path, lesson: int, scratch: Path) -> tuple[float, float, list[str]]:
    """(total CPU seconds, longest wall seconds, failures: id and message) of every check run bare, in this process."""
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = os.environ["PYTHONDONTWRITEBYTECODE"] = "1"  # as the worker sets them
    os.environ["ROVER_ANSWERS"] = "y"  # from lesson 6 the gate asks: the grader says yes, as the worker does
    cpu, longest, failures = 0.0, 0.0, []
    tempfile.tempdir = str(scratch)  # the tools' temp files (bash's spill files) go with the scratch folder
    for number, check in enumerate(checks_up_to(lesson)):
        checks.load(check.lesson)
        tmp = scratch / f"bare-{number}"
        tmp.mkdir()
        before, started = os.times(), time.perf_counter()
        lab = checks.Lab.in_process(workspace, tmp)
        try:
            checks.REGISTRY[check.id](lab)
        except Exception as failure:
            failures.append(f"{check.id}: {str(failure)[:200]}")
        finally:
            lab.close()  # its pinned folders: left open, a few runs reach select()'s 1,024 descriptors
        wall, after = time.perf_counter() - started, os.times()
        cpu += sum(after[:4]) - sum(before[:4])
        longest = max(longest, wall)
    tempfile.tempdir = None
    return cpu, longest, failures


def full_check(workspace: Path, backend: str, kit: str = "") -> tuple[float, float]:
    """(wall seconds, CPU seconds of the whole process tree) of one `workshop check --json` in this backend
    (with the grader of the checkout `kit`, if given)."""
    env = {**os.environ, "WORKSHOP_SANDBOX": backend, **({"PYTHONPATH": kit} if kit else {})}
    before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "grader.cli", "check", "--json"], cwd=workspace, capture_output=True, check=False, env=env)
    wall, after = time.perf_counter() - started, resource.getrusage(resource.RUSAGE_CHILDREN)
    report = json.loads(done.stdout)
    assert report["sandbox"] == backend, f"graded in {report['sandbox']}, not {backend}"
    unpassed = [f"{check['id']} ({'busy' if check['message'].endswith('run `workshop check` again') else check['status']})"
                for check in report["checks"] if check["status"] != "passed"]
    if unpassed:  # on an overloaded machine a check may be too busy to finish: said beside the figures, never hidden
        print(f"  {backend}{' (' + kit + ')' if kit else ''}: not passed: {', '.join(unpassed)}", flush=True)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--lesson", type=int, default=8)
    parser.add_argument("--backends", default="bwrap,process")
    parser.add_argument("--against", default="", help="another checkout of the kit, timed side by side (as NAME@before)")
    args = parser.parse_args()
    from grader.boundary.backends import bwrap

    backends = [name for name in args.backends.split(",") if name != "bwrap" or bwrap.why_not() is None]
    kits = {name: "" for name in backends}
    if args.against:
        kits.update({f"{name}@before": str(Path(args.against).resolve()) for name in backends})
        backends += [f"{name}@before" for name in backends]
    cores = len(os.sched_getaffinity(0))
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as scratch:
        workspace = render(args.lesson, Path(scratch) / "ws", solved=True)
        sys.path.insert(0, str(workspace))
        sys.dont_write_bytecode = True
        floors: list[float] = []
        fulls: dict[str, list[float]] = {name: [] for name in backends}
        extra: dict[str, list[float]] = {name: [] for name in backends}
        for run in range(args.runs):
            folder = Path(scratch) / f"run-{run}"
            folder.mkdir()
            cpu, longest, failures = bare_checks(workspace, args.lesson, folder)
            assert not failures, f"{len(failures)} checks failed bare on the solution: {failures}"
            floors.append(max(cpu / cores, longest))
            line = f"run {run + 1}: floor {floors[-1]:.2f}s (check CPU {cpu:.2f}s / {cores} cores, longest {longest:.2f}s)"
            for name in backends:
                wall, full_cpu = full_check(workspace, name.split("@")[0], kits[name])
                fulls[name].append(wall)
                extra[name].append(full_cpu - cpu)
                line += f"; {name} {wall:.2f}s ({wall / floors[-1]:.2f}x, CPU {full_cpu:.2f}s)"
            print(line + f"; load {os.getloadavg()[0]:.1f}", flush=True)
    floor = statistics.median(floors)
    print(f"lesson-{args.lesson} solved, {len(checks_up_to(args.lesson))} checks, median of {args.runs}: floor {floor:.2f}s")
    for name in backends:
        full = statistics.median(fulls[name])
        beyond = statistics.median(extra[name])
        print(f"  {name:8}: full check {full:.2f}s, ratio {full / floor:.2f}x (target <= 1.3x); CPU beyond the checks' own: "
              + (f"{beyond:.2f}s" if beyond >= 0 else "not measured (getrusage does not see the sandbox's processes)"))


if __name__ == "__main__":
    main()
