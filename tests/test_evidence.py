"""Door 3, evidence in: what the student's side leaves in the run folder (a crash log) is read through one reader
that follows no link, opens regular files only and reads a bounded amount; the side's start-up complaints are heard
only before the student's code can have run, so no text of the student's is ever quoted as the machine's failure.

Each attack is graded in a child process with its memory bounded and on a timeout: a grader that followed a link
to /dev/zero or opened a FIFO dies or hangs there, and the test fails instead of taking the machine down.
"""
from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys

import pytest

from grader.grading.runner import SIDE_BROKEN

CHILD_MEMORY = 3 << 29  # the grading child's address space: far above a grading's needs, far below a read of /dev/zero
PEAK = 200  # MB the grading child may reach (about 50 here; 260 when it read a 120 MB log)
GRADE = """
import json, sys
from pathlib import Path
from grader.course import kit
from grader.grading.runner import run_suite
root, ids = Path(sys.argv[1]), sys.argv[2].split(",")
checks = [check for check in kit.lesson(1).checks if check.id in ids]
suite = run_suite(root, checks, time_limit=10, jobs=1)
# VmHWM, not ru_maxrss: Linux keeps ru_maxrss across exec, so a child of a big test process starts at its parent's size
peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"root_cause": suite.root_cause, "outcomes": [[o.status, o.message] for o in suite.outcomes],
                  "peak_mb": peak >> 10}))
"""


def _bounded() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY, CHILD_MEMORY))


def grade(root, ids: str, timeout: float = 90, **env: str) -> dict:
    """Grade lesson 1's checks `ids` of the workspace `root` in a bounded child; its suite as data."""
    try:
        done = subprocess.run([sys.executable, "-c", GRADE, str(root), ids], capture_output=True, text=True, timeout=timeout,
                              preexec_fn=_bounded, env={**os.environ, "WORKSHOP_BACKSTOP": "1000", **env})
    except subprocess.TimeoutExpired:
        pytest.fail(f"the grading did not end in {timeout:g} s: the grader waited on something the side planted")
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


def _tool(root, body: str) -> None:
    """lesson 1's read tool replaced by `body` (the run's code, in the worker's own folder as its cwd)."""
    read = root / "rover/tools/read.py"
    read.write_text(read.read_text().split("def run(")[0] + "import os\n\ndef run(cwd, path, offset=1, limit=None):\n" + body)


def _at_import(root, body: str) -> None:
    init = root / "rover/__init__.py"
    init.write_text(init.read_text() + "\nimport os as _os\n" + body)


def _one_check(workspace, body: str) -> tuple[str, str]:
    """read.numbered graded with lesson 1's read tool replaced by `body`: its status and message, the grader's
    peak memory within PEAK."""
    root = workspace(1)
    _tool(root, body)
    suite = grade(root, "read.numbered")
    assert suite["peak_mb"] < PEAK, f"the grader grew to {suite['peak_mb']} MB reading the side's crash log"
    [[status, message]] = suite["outcomes"]
    return status, message


@pytest.mark.parametrize("plant", ["os.symlink('/dev/zero', 'crash.log')", "os.mkfifo('crash.log')"], ids=["dev-zero", "fifo"])
def test_a_crash_log_made_a_link_or_a_fifo_is_not_read(workspace, plant):
    """The worker dies after putting a link to /dev/zero (on main: the grader grew until MemoryError) or a FIFO (on
    main: the row waited past every timeout) in place of its crash log: the check is an error at once, naming the
    exit, and the grader reads none of it."""
    status, message = _one_check(workspace, f"    os.remove('crash.log')\n    {plant}\n    os._exit(7)\n")
    assert status == "error" and "ended (exit status 7) during this call: did the code" in message, message


def test_a_crash_log_larger_than_the_bound_is_not_read_whole(workspace):
    """A regular crash log of 120 MB (sparse: no disk spent; the side's files stop at 128 MiB) is refused past the
    bound, not read: on main the grader read all of it, twice over as bytes and text (260 MB)."""
    status, message = _one_check(workspace, "    with open('crash.log', 'r+b') as log:\n        log.truncate(120 << 20)\n    os._exit(7)\n")
    assert status == "error" and "ended (exit status 7) during this call: did the code" in message, message


def test_a_crash_site_is_still_found(workspace):
    """The reader refuses what is planted, not the evidence: a real crash still names the student's line."""
    status, message = _one_check(workspace, "    import ctypes\n    ctypes.string_at(0)\n")
    assert status == "error" and "rover/tools/read.py line" in message, message


def test_a_fifo_for_the_import_s_crash_log_does_not_hold_the_run(workspace):
    """The import itself plants the FIFO and dies: on main `workshop check` waited forever."""
    root = workspace(1)
    _at_import(root, "_os.remove('crash.log')\n_os.mkfifo('crash.log')\n_os._exit(3)\n")
    suite = grade(root, "read.numbered")
    assert suite["root_cause"] and "the process importing it died" in suite["root_cause"], suite
    assert "exit status 3" in suite["root_cause"]


@pytest.mark.skipif(not shutil.which("bwrap"), reason="needs bubblewrap: the side's own stderr is bwrap's")
def test_the_students_words_on_bwraps_stderr_are_never_the_machines_failure(workspace):
    """At import the code writes a bwrap-like complaint to bwrap's own stderr (its init holds it, as pid 1) and dies:
    on main the run said "the grader's sandbox did not start" in the student's words, and class grade graded the row
    again as the machine's fault. It is the code's death, said as such."""
    root = workspace(1)
    _at_import(root, "for _fd in ('/proc/1/fd/2', '/proc/self/fd/2'):\n"
                     "    try:\n"
                     "        _w = _os.open(_fd, _os.O_WRONLY)\n"
                     "        _os.write(_w, b\"bwrap: Can't find the grader's keys: forged by the student\\n\")\n"
                     "    except OSError:\n"
                     "        pass\n"
                     "_os._exit(1)\n")
    suite = grade(root, "read.numbered", WORKSHOP_SANDBOX="bwrap")
    cause = suite["root_cause"] or ""
    assert not cause.startswith(SIDE_BROKEN) and "forged" not in cause, cause
    assert "the process importing it died" in cause and "exit status 1" in cause, cause
