"""CPU seconds per test file: what the kit's own suite costs, measured so a shared machine's load does not blur it.

    nice -n 5 python bench/suite_cpu.py [pytest arguments, e.g. -m "not slow" or tests/test_bulk.py]

Runs `python -m pytest` with this file as a plugin. Each process that runs tests (the only one, or each xdist worker)
records, per test, the CPU time it and all its descendants used (a cgroup v1 cpuacct group of its own, or else getrusage
SELF + CHILDREN, which misses a sandbox's processes that nobody waits for), and the
totals are printed per file, the top 15 first, beside the wall time and the load average (`os.getloadavg`).
Baseline (issue 21): 900 tests; serial in CI 22 min; `-m "not slow"` 4 min 42 s at load 28.
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import pytest

OUT = "SUITE_CPU_DIR"
CPUACCT = Path("/sys/fs/cgroup/cpuacct")  # cgroup v1's CPU accounting, where the machine has it
_group: Path | None = None


def pytest_configure(config) -> None:
    """In a cgroup of its own, this process's CPU counts every descendant, even a sandbox's orphans nobody waits for
    (getrusage's CHILDREN misses those). Without one (no cgroup v1, no rights), getrusage it is."""
    global _group
    if os.environ.get(OUT) and (CPUACCT / "cpuacct.usage").exists():
        try:
            group = CPUACCT / f"suite-cpu-{os.getpid()}"
            group.mkdir()
            (group / "cgroup.procs").write_text(str(os.getpid()))
            _group = group
        except OSError:
            pass


def pytest_unconfigure(config) -> None:
    global _group
    if _group is not None:
        try:
            (CPUACCT / "cgroup.procs").write_text(str(os.getpid()))
            _group.rmdir()  # refused while a leftover process is still in it: the test that left it failed already
        except OSError:
            pass
        _group = None


def _cpu() -> float:
    if _group is not None:
        return int((_group / "cpuacct.usage").read_text()) / 1e9
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    before = _cpu()
    yield
    folder = os.environ.get(OUT)
    if folder:
        with open(Path(folder) / f"{os.getpid()}.jsonl", "a") as out:
            out.write(json.dumps({"file": item.path.name, "cpu": _cpu() - before}) + "\n")


def main(args: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="suite-cpu-") as folder:
        env = {**os.environ, OUT: folder, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")])}
        load_before, started = os.getloadavg(), time.monotonic()
        code = subprocess.call([sys.executable, "-m", "pytest", "-p", "suite_cpu", *args], env=env)
        wall, load_after = time.monotonic() - started, os.getloadavg()
        cpu: dict[str, float] = defaultdict(float)
        tests: dict[str, int] = defaultdict(int)
        for log in Path(folder).glob("*.jsonl"):
            for line in log.read_text().splitlines():
                record = json.loads(line)
                cpu[record["file"]] += record["cpu"]
                tests[record["file"]] += 1
    print(f"\n{sum(tests.values())} tests, {sum(cpu.values()):.0f} CPU s in all, wall {wall / 60:.1f} min "
          f"(load average {load_before[0]:.1f} before, {load_after[0]:.1f} after, 1-minute)")
    print("baseline (issue 21): 900 tests; serial 22 min in CI; -m 'not slow' 4 min 42 s at load 28")
    for file, seconds in sorted(cpu.items(), key=lambda pair: -pair[1])[:15]:
        print(f"{seconds:8.1f} CPU s  {tests[file]:4d} tests  {file}")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
