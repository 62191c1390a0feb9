"""`workshop check` on a terminal shows a live line while it grades, gone before the screen; a pipe gets nothing extra."""
from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time

from grader.commands.progress_line import ProgressLine
from grader.course import kit


def _text(line: ProgressLine) -> str:
    return line.__rich__().plain


def test_the_line_counts_checks_done_and_names_the_one_running_longest():
    checks = kit.lesson(1).checks
    line = ProgressLine(len(checks))
    assert _text(line) == "grading: importing rover…"
    line.started(checks[0])
    time.sleep(0.01)
    line.started(checks[1])
    assert _text(line) == f"grading: 0 of {len(checks)} checks done · running {checks[0].id}"

    class Done:
        check = checks[0]

    line.finished(Done())
    assert _text(line) == f"grading: 1 of {len(checks)} checks done · running {checks[1].id}"


def _on_a_terminal(command: list[str], cwd) -> bytes:
    """What a terminal of 80 columns shows while `command` runs (all the bytes written to it)."""
    leader, follower = pty.openpty()
    env = {**os.environ, "COLUMNS": "80", "LINES": "24", "TERM": "xterm"}
    env.pop("CI", None)
    process = subprocess.Popen(command, cwd=cwd, stdin=follower, stdout=follower, stderr=follower, env=env, close_fds=True)
    os.close(follower)
    shown = b""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if select.select([leader], [], [], 0.5)[0]:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal's other end closed: the command is done
                break
            if not chunk:
                break
            shown += chunk
        elif process.poll() is not None:
            break
    process.wait(10)
    os.close(leader)
    return shown


def test_check_on_a_terminal_shows_progress_and_a_pipe_does_not(rendered):
    workspace = rendered(0, True)
    command = [sys.executable, "-m", "grader.cli", "check"]
    shown = _on_a_terminal(command, workspace)
    total = len(kit.lesson(0).checks)
    assert f"of {total} checks done".encode() in shown, shown[-2000:]
    assert shown.rfind(b"checks done") < shown.find(b"Lesson 0:"), "the screen is drawn after the line is gone"
    piped = subprocess.run(command, cwd=workspace, capture_output=True, text=True, env={k: v for k, v in os.environ.items() if k != "CI"})
    assert "checks done" not in piped.stdout + piped.stderr
    as_json = subprocess.run([*command, "--json"], cwd=workspace, capture_output=True, text=True)
    assert "checks done" not in as_json.stdout + as_json.stderr
