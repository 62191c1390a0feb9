"""Do valid solutions still pass on a busy machine? Grading while other gradings run in the background.

    python bench/under_load.py [--rounds 5] [--quick] [--loads 2,4]

For each background load (2x and 4x the cores: that many `workshop check` loops on solved lesson-8 workspaces),
grades the solved lesson-8 workspace and every alternative of tests/fixtures/alternatives.toml (valid solutions),
ROUNDS times each, then runs `workshop class grade` over 16 copies of the solved lesson-8 workspace once per round.
Every check on these is expected to pass: any other status is a false failure, except "the machine was too busy"
(status error, which says to run the check again), counted apart. Target: 0 false failures. `--quick` (12-15 minutes
on two cores): one round, lesson 8's solution and a seeded sample of two alternatives of lessons 5-8 (the checks
that failed under load), 3 copies for class grade (three alternatives and 4 copies took 14.5-16.6 min here). Both end with the run's own load: lesson 1's read with an
endless loop, hit by every check at once and no background, where every check must be a timeout naming the loop's
line, never "too busy". Prints the load average, both counts, the failing checks, and wall times. Leaves no process
and no folder behind.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import psutil

from grader.course import fixtures
from grader.course.render import render

CHECK = [sys.executable, "-m", "grader.cli", "check", "--json"]
LIMIT = 600  # seconds for one grading, however busy the machine


def is_busy(check: dict) -> bool:
    return check["status"] == "error" and "too busy" in check["message"]


class Tally:
    def __init__(self) -> None:
        self.walls: list[float] = []
        self.loads: list[float] = []
        self.false: Counter[str] = Counter()
        self.busy = self.checks = 0
        self.examples: dict[str, str] = {}

    def add(self, checks: list[dict], wall: float | None = None) -> None:
        if wall is not None:
            self.walls.append(wall)
        self.loads.append(os.getloadavg()[0])
        for check in checks:
            self.checks += 1
            if is_busy(check):
                self.busy += 1
            elif check["status"] != "passed":
                self.false[check["id"]] += 1
                self.examples.setdefault(check["id"], f"{check['status']}: {check['message'][:160]}")


def run_grader(command: list[str], cwd: Path | None, env: dict, limit: float) -> str | None:
    """The grader's stdout, or None when it took longer than `limit`; in its own group, stopped whatever happens."""
    grader = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                              start_new_session=True)
    try:
        return grader.communicate(timeout=limit)[0]
    except subprocess.TimeoutExpired:
        return None
    finally:
        stop([grader])


def grade(folder: Path, env: dict, tally: Tally) -> None:
    started = time.perf_counter()
    try:
        checks = json.loads(run_grader(CHECK, folder, env, LIMIT) or "")["checks"]
    except (json.JSONDecodeError, KeyError):
        checks = [{"id": f"(no report: {folder.name})", "status": "crashed", "message": "no JSON within the limit"}]
    tally.add(checks, time.perf_counter() - started)


def class_grade(students: Path, env: dict, tally: Tally) -> float:
    report = students.parent / "class.json"
    started = time.perf_counter()
    run_grader([sys.executable, "-m", "grader.cli", "class", "grade", str(students), "--json", str(report)], None, env, LIMIT * 4)
    wall = time.perf_counter() - started
    if not report.exists():
        tally.add([{"id": "(class grade wrote no report)", "status": "crashed", "message": ""}])
        return wall
    for student in json.loads(report.read_text())["students"]:
        tally.add(student["grade"]["checks"] if student["grade"] else
                  [{"id": f"(not graded: {student['name']})", "status": "crashed", "message": str(student["problem"])}])
    report.unlink()
    return wall


def targets(scratch: Path, quick: bool, seed: int) -> list[Path]:
    """The solved lesson-8 workspace, then one workspace per alternative (each on its lesson's solved render);
    `quick`: a seeded sample of two alternatives of lessons 5-8."""
    import random

    solved = {8: render(8, scratch / "solved-8", solved=True)}
    folders = [solved[8]]
    cases = fixtures.load(fixtures.ALTERNATIVES)
    if quick:
        cases = random.Random(seed).sample([case for case in cases if case.lesson >= 5], 2)
    for case in cases:
        if case.lesson not in solved:
            solved[case.lesson] = render(case.lesson, scratch / f"solved-{case.lesson}", solved=True)
        folder = scratch / f"alternative-{len(folders):02d}"
        shutil.copytree(solved[case.lesson], folder)
        case.apply(folder)
        folders.append(folder)
    return folders


def start_background(count: int, scratch: Path, env: dict) -> list[subprocess.Popen]:
    """`count` loops of `workshop check` on private copies of the solved lesson-8 workspace, each its own group."""
    loops = []
    for index in range(count):
        folder = scratch / f"background-{index}"
        if not folder.exists():
            shutil.copytree(scratch / "solved-8", folder)
        loop = f"import subprocess\nwhile True: subprocess.run({CHECK!r}, cwd={str(folder)!r}, capture_output=True)"
        loops.append(subprocess.Popen([sys.executable, "-c", loop], env=env, start_new_session=True,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    return loops


def stop(leaders: list[subprocess.Popen]) -> None:
    """Ctrl-C to each leader's group (a grader then stops its workers), then a kill for whatever is left after 10 s."""
    family = []
    for leader in leaders:
        try:
            family += [psutil.Process(leader.pid), *psutil.Process(leader.pid).children(recursive=True)]
        except psutil.NoSuchProcess:  # it has finished; what it left in its group still gets the Ctrl-C
            pass
        try:
            os.killpg(leader.pid, signal.SIGINT)
        except ProcessLookupError:
            pass
    _, alive = psutil.wait_procs(family, timeout=10)
    for process in alive:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            pass
    for leader in leaders:
        leader.wait(timeout=10)


def show(title: str, tally: Tally) -> None:
    walls = sorted(tally.walls)
    timing = (f"wall {statistics.median(walls):.1f} s median, {walls[-1]:.1f} s max over {len(walls)}" if walls else "")
    print(f"  {title}: load {min(tally.loads):.1f}-{max(tally.loads):.1f}; {tally.checks} checks: "
          f"{sum(tally.false.values())} false failures, {tally.busy} busy-machine errors; {timing}")
    for check_id, count in tally.false.most_common():
        print(f"      {count}x {check_id}: {tally.examples[check_id]}")


LOOP_AT = "def run(cwd: Path, path: str, offset: int = 1, limit: int | None = None) -> ToolResult:\n"


def own_loop(scratch: Path, env: dict) -> None:
    """Lesson 1's read with an endless loop, every check hitting it at once: the run's own load, never 'too busy'."""
    folder = render(1, scratch / "own-loop", solved=True)
    tool = folder / "rover" / "tools" / "read.py"
    source = tool.read_text()
    tool.write_text(source.replace(LOOP_AT, LOOP_AT + "    while offset > 0:\n        pass\n"))
    line = source[: source.index(LOOP_AT)].count("\n") + 2
    started = time.monotonic()
    done = subprocess.run(CHECK, cwd=folder, env=env, capture_output=True, text=True, timeout=LIMIT)
    wall = time.monotonic() - started
    checks = [check for check in json.loads(done.stdout)["checks"] if check["lesson"] == 1]
    named = [check for check in checks if check["status"] == "timeout" and any(f"read.py line {at}" in check["message"] for at in (line, line + 1))]
    busy = [check for check in checks if is_busy(check)]
    print(f"the run's own load (lesson 1's read loops, {len(checks)} checks at once, no background): {len(named)} "
          f"timeouts naming line {line}, {len(busy)} 'too busy' (target 0), in {wall:.0f} s, load {os.getloadavg()[0]:.1f}")


def multiples(text: str) -> list[int]:
    """`2,4` -> [2, 4]: whole numbers of at least 1 (argparse turns a ValueError into one line and exit 2)."""
    found = [int(part) for part in text.split(",")]
    if min(found) < 1:
        raise ValueError(text)
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, help="rounds per load level (default 5; 1 with --quick)")
    parser.add_argument("--quick", action="store_true", help="one round, lesson 8 and two alternatives of lessons 5-8, 3 copies")
    parser.add_argument("--seed", type=int, default=None, help="the seed of --quick's sample (printed)")
    parser.add_argument("--loads", type=multiples, default=[2, 4], help="background gradings, in multiples of the cores (default 2,4)")
    args = parser.parse_args()
    rounds = args.rounds or (1 if args.quick else 5)
    cores = os.cpu_count() or 1
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so `finally` cleans up when the bench is stopped
    with tempfile.TemporaryDirectory(prefix="workshop-bench-load-") as name:
        scratch = Path(name)
        (scratch / "tmp").mkdir()
        env = {**os.environ, "TMPDIR": str(scratch / "tmp"), "WORKSHOP_CACHE": str(scratch / "cache")}
        os.environ["WORKSHOP_CACHE"] = env["WORKSHOP_CACHE"]  # rendering here keeps its template repo in scratch too
        seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(2), "big")
        folders = targets(scratch, args.quick, seed)
        students = scratch / "class"
        for index in range(3 if args.quick else 16):
            shutil.copytree(scratch / "solved-8", students / f"student-{index:02d}")
        print(f"{cores} cores, {len(folders)} valid workspaces (lesson 8 solved + alternatives"
              f"{f', sample seed {seed}' if args.quick else ''}), {rounds} round(s), load before: {os.getloadavg()[0]:.1f}")
        everything = Tally()
        for factor in args.loads:
            loops = start_background(factor * cores, scratch, env)
            try:
                time.sleep(5)  # let the background gradings get going
                singles, bulk, bulk_walls = Tally(), Tally(), []
                for _ in range(rounds):
                    for folder in folders:
                        grade(folder, env, singles)
                    bulk_walls.append(class_grade(students, env, bulk))
                bulk.walls = bulk_walls
            finally:
                stop(loops)
            print(f"background: {factor * cores} gradings in a loop ({factor}x the cores)")
            show("workshop check, each workspace", singles)
            show(f"workshop class grade of {len(os.listdir(students))} copies", bulk)
            for tally in (singles, bulk):
                everything.false.update(tally.false)
                everything.busy += tally.busy
        own_loop(scratch, env)
        total = sum(everything.false.values())
        print(f"false failures in all: {total} (target 0: {'met' if total == 0 else 'NOT met'}); "
              f"busy-machine errors: {everything.busy}")


if __name__ == "__main__":
    main()
