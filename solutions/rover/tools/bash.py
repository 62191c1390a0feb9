"""bash: run one shell command, wait for it, and return the end of what it printed.

The model learns what happened from the output, so it has to be complete where it matters
(the end: the summary line, the error) and bounded where it does not. The tail comes back;
the whole output goes to a file the model can read or search if the tail is not enough.
"""
from __future__ import annotations

import os
import select
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from rover.tools.limits import MAX_BYTES, MAX_LINES, format_size
from rover.tools.result import ToolError, ToolResult
from rover.tools.tail import Tail

NAME = "bash"
DEFAULT_TIMEOUT = 120
DESCRIPTION = (
    "Run a bash command in the working directory and wait for it to finish. stdout and stderr come back "
    f"merged, in the order they were written. Only the last {MAX_LINES} lines or {format_size(MAX_BYTES)} are "
    "shown; when output is cut, the full output is saved to a file named at the end. "
    f"Commands are killed after `timeout` seconds (default {DEFAULT_TIMEOUT}). There is no input: "
    "do not run interactive programs."
)
INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "command": {"type": "string", "description": "The command, run with bash -c."},
        "timeout": {"type": "number", "minimum": 0.1, "description": f"Seconds before it is killed. Default {DEFAULT_TIMEOUT}."},
    },
    "required": ["command"],
    "additionalProperties": False,
}


def run(cwd: Path, command: str, timeout: float = DEFAULT_TIMEOUT) -> ToolResult:
    if not cwd.is_dir():
        raise ToolError(f"The working directory {cwd} does not exist, so the command cannot run there.")
    process = subprocess.Popen(
        ["bash", "-c", command], cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, start_new_session=True,  # its own process group: a timeout kills it all
    )
    spill = None
    tail = Tail()
    try:  # the spill file only now, once the command runs: a command that cannot start leaves nothing behind
        with tempfile.NamedTemporaryFile(prefix="rover-bash-", suffix=".log", delete=False) as spill:
            timed_out = _pump(process, tail, spill, time.monotonic() + timeout)
    except BaseException:  # Ctrl-C included: never leave the command running behind us, nor its spill file
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        if spill is not None:
            os.unlink(spill.name)
        raise
    tail.close()
    text = tail.text() or "(no output)"
    if tail.truncated:
        text += f"\n\n{tail.notice(spill.name)}"
    else:
        os.unlink(spill.name)
    if timed_out:
        return ToolResult(f"{text}\n\nCommand timed out after {timeout:g} seconds", is_error=True)
    if process.returncode < 0:
        number = -process.returncode
        return ToolResult(f"{text}\n\nCommand was killed by signal {number} ({signal.Signals(number).name})", is_error=True)
    if process.returncode != 0:
        return ToolResult(f"{text}\n\nCommand exited with code {process.returncode}", is_error=True)
    return ToolResult(text)


def _pump(process: subprocess.Popen, tail: Tail, spill, deadline: float) -> bool:
    """Copy output to the tail and the spill file until the shell exits; True if it timed out.

    The clock is looked at on every round, so a command that never stops printing still stops
    at its timeout. Reading ends when bash exits, not at end-of-file: a background job
    (`server &`) can keep the pipe open forever, and must not keep the tool waiting with it.
    """
    stream = process.stdout
    try:
        while process.poll() is None:
            if time.monotonic() > deadline:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                _drain(stream, tail, spill)
                return True
            if not _read_some(stream, tail, spill):  # end-of-file: only bash's exit is left to wait for
                try:
                    process.wait(max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass
        _drain(stream, tail, spill)  # what bash wrote just before it exited is still in the pipe
        return False
    finally:
        stream.close()


def _read_some(stream, tail: Tail, spill, wait: float = 0.05) -> bool:
    """Take one chunk if one comes within `wait` seconds; False at end-of-file."""
    if not select.select([stream], [], [], wait)[0]:
        return True
    chunk = os.read(stream.fileno(), 65536)
    tail.feed(chunk)
    spill.write(chunk)
    return bool(chunk)


def _drain(stream, tail: Tail, spill) -> None:
    """Take what is already in the pipe, without waiting for writers that may never close it."""
    stop = time.monotonic() + 0.5  # a job left behind may keep the pipe full for ever
    while time.monotonic() < stop and select.select([stream], [], [], 0)[0]:
        if not _read_some(stream, tail, spill, 0):
            return
