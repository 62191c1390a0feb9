"""Lesson 2: bash, run for real in a fresh directory, with output, limits and clocks checked."""
from __future__ import annotations

import os
import re
import time
from pathlib import Path

from grader.grading.checks import Lab, check, excerpt, expect, tool_results

SPILL_NOTICE = r"\[Showing lines {first}-{last} of {last} \({limit} limit\)\. Full output: (\S+)\]$"


def spilled(text: str, first: int, last: int, limit: str) -> Path:
    """The spill file named by a tail notice, after checking the notice's exact shape."""
    pattern = SPILL_NOTICE.format(first=first, last=last, limit=re.escape(limit))
    found = re.search(pattern, text)
    expect(found, f"the output should end with [Showing lines {first}-{last} of {last} ({limit} limit). Full output: PATH], got {excerpt(text[-160:])}")
    path = Path(found.group(1))
    expect(path.is_file(), f"the notice names {path}, but there is no such file")
    return path


def gone(pid: int) -> bool:
    """True when the process no longer runs (a zombie waiting to be reaped counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return state in ("Z", "X")
    except FileNotFoundError:
        return True
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False


def timed_bash(lab: Lab, command: str, timeout: float):
    """Run bash through the student's registry; return (result, seconds it took)."""
    started = time.monotonic()
    result = lab.tool("bash", command=command, timeout=timeout)
    return result, time.monotonic() - started


@check("bash.output")
def output(lab: Lab) -> None:
    text = lab.ok("bash", command="echo hello; printf 'no newline at the end'").text
    expect(text == "hello\nno newline at the end", f"expected the command's output exactly, got {excerpt(text)}")
    expect(lab.ok("bash", command="true").text == "(no output)", "a command that prints nothing should say (no output)")


@check("bash.cwd")
def cwd(lab: Lab) -> None:
    text = lab.ok("bash", command="pwd; echo made > here.txt").text
    expect(Path(text.strip()).resolve() == lab.tmp.resolve(), f"commands should run in the working directory {lab.tmp}, pwd said {excerpt(text)}")
    expect((lab.tmp / "here.txt").is_file(), "a file the command writes should land in the working directory")


@check("bash.merged")
def merged(lab: Lab) -> None:
    text = lab.ok("bash", command="echo one; echo two >&2; echo three; echo four >&2").text
    expect(text == "one\ntwo\nthree\nfour", f"stdout and stderr should arrive merged, in the order written: expected 'one two three four' on four lines, got {excerpt(text)}")


@check("bash.exit-code")
def exit_code(lab: Lab) -> None:
    result = lab.error("bash", command="echo 'collecting...'; echo 'E   boom' >&2; exit 3")
    expect("collecting..." in result.text and "E   boom" in result.text, f"a failing command's output is what explains the failure: keep it, got {excerpt(result.text)}")
    expect(result.text.rstrip().endswith("Command exited with code 3"), f"expected the result to end with 'Command exited with code 3', got {excerpt(result.text[-80:])}")


@check("bash.tail-lines")
def tail_lines(lab: Lab) -> None:
    text = lab.ok("bash", command="seq 1 5000").text
    body, _, _ = text.rpartition("\n\n")
    expect(body.split("\n")[:1] == ["3001"] and body.endswith("\n5000"),
           f"5000 lines of output should be cut to the LAST 2000 (3001-5000), got {excerpt(body[:40])}...{excerpt(body[-40:])}")
    full = spilled(text, 3001, 5000, "2000-line")
    expect(full.read_text().split() == [str(n) for n in range(1, 5001)], f"{full} should hold the whole output, all 5000 lines")


@check("bash.tail-bytes")
def tail_bytes(lab: Lab) -> None:
    text = lab.ok("bash", command="for i in $(seq 1 1000); do printf '%099d\\n' $i; done").text
    body, _, _ = text.rpartition("\n\n")
    lines = body.split("\n")
    expect(len(lines) == 512 and all(len(line) == 99 for line in lines),
           f"1000 lines of 100 bytes under a 51,200-byte cap: expected the last 512 whole lines, got {len(lines)}")
    expect(int(lines[0]) == 489 and int(lines[-1]) == 1000, f"the lines kept should be the last ones, 489 to 1000; got {int(lines[0])} to {int(lines[-1])}")
    spilled(text, 489, 1000, "50.0KB")


@check("bash.timeout")
def timeout(lab: Lab) -> None:
    result, took = timed_bash(lab, "echo waiting; sleep 30", timeout=1)
    expect(result.is_error, f"a command past its timeout should be an is_error result, got {excerpt(result.text)}")
    expect(took < 5, f"a 1-second timeout should return in about a second, it took {took:.1f} s")
    expect("Command timed out after 1 seconds" in result.text, f"the result should say 'Command timed out after 1 seconds', got {excerpt(result.text)}")
    expect("waiting" in result.text, "output printed before the timeout should still come back")


@check("bash.kills-group")
def kills_group(lab: Lab) -> None:
    lab.error("bash", command="sh -c 'echo $$ > child.pid; exec sleep 60' & sleep 60", timeout=1)
    deadline = time.monotonic() + 2
    pid = int((lab.tmp / "child.pid").read_text())
    while not gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    alive = not gone(pid)
    if alive:
        os.kill(pid, 9)
    expect(not alive, "after a timeout, the command's children were still running: kill the whole process group (start_new_session=True, os.killpg)")


@check("bash.background")
def background(lab: Lab) -> None:
    result, took = timed_bash(lab, "sleep 30 & echo started", timeout=20)
    expect(took < 5, f"a command that leaves `sleep 30 &` behind should return when bash exits; it took {took:.1f} s")
    expect("started" in result.text and not result.is_error, f"expected 'started', got {excerpt(result.text)}")


@check("bash.bounded-memory")
def bounded_memory(lab: Lab) -> None:
    result, peak = lab.measure("bash", command="yes $(printf 'x%.0s' $(seq 1 200)) | head -n 100000")  # 20 MB
    expect("(50.0KB limit). Full output: " in result.text[-300:],
           f"20 MB of output should be cut to its tail with a notice, got {excerpt(result.text[-160:])}")
    expect(peak < 4_000_000, f"20 MB of output took {peak / 1e6:.0f} MB of memory: keep only the tail, stream the rest to the file")


@check("bash.stash-scenario")
def stash_scenario(lab: Lab) -> None:
    run = lab.scenario(2)
    runs = [str(block.get("content")) for block in tool_results(run.messages) if "passed" in str(block.get("content")) or "failed" in str(block.get("content"))]
    expect(runs and "2 failed" in runs[-1], f"running stash's suite should report '2 failed', got {excerpt(runs[-1][-300:] if runs else '(no test run)')}")
