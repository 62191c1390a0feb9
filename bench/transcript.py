"""How long `workshop transcript` takes on a 50 MB transcript: load, check, split into segments, draw the page.

    python bench/transcript.py [MEGABYTES]

The transcript is made up here: a 60-request session whose requests carry the whole conversation again, with
a 200 KB command output every few turns (folded and cut on the page). Target: under 5 s. Prints figures;
asserts nothing.
"""
from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.transcripts.load import load  # noqa: E402
from grader.transcripts.page import render  # noqa: E402


def transcript(megabytes: float) -> dict:
    """Requests that grow by one tool call and result each, until the file is about `megabytes` large."""
    messages: list[dict] = [{"role": "user", "content": "Find out why the tests fail, and fix it."}]
    requests, size, number = [], 0, 0
    while size < megabytes * 1_000_000:
        number += 1
        call = {"type": "tool_use", "id": f"t{number}", "name": "bash", "input": {"command": f"cat big-{number}.log"}}
        output = "".join(f"{number}:{line} " + "log text " * 10 + "\n" for line in range(2_000 if number % 4 == 0 else 40))
        size += len(json.dumps(messages)) + len(output)
        requests.append({"messages": messages, "reply": {"content": [call], "stop_reason": "tool_use"}, "seconds": 1.5,
                         "usage": {"input_tokens": len(json.dumps(messages)) // 4, "output_tokens": 30}, "tool_calls": [
                             {"id": call["id"], "name": "bash", "input": call["input"], "result": output, "is_error": False, "diff": None}]})
        messages = [*messages, {"role": "assistant", "content": [call]},
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": output}]}]
    return {"format": "rover-transcript", "version": 2, "model": "bench", "task": messages[0]["content"], "system": "You are Rover.",
            "tools": [], "requests": requests, "messages": messages}


def main() -> None:
    megabytes = float(sys.argv[1]) if len(sys.argv) > 1 else 50
    with tempfile.TemporaryDirectory(prefix="bench-transcript-") as scratch:
        file = Path(scratch) / "big.json"
        file.write_text(json.dumps(transcript(megabytes)), encoding="utf-8")
        started = time.perf_counter()
        run = load(file)
        loaded = time.perf_counter()
        page = render([run])
        drawn = time.perf_counter()
        (Path(scratch) / "big.html").write_text(page, encoding="utf-8")
        print(f"transcript {file.stat().st_size / 1e6:.1f} MB, {len(run.requests)} requests -> page {len(page) / 1e6:.1f} MB")
        print(f"load and check {loaded - started:.2f} s, segments and page {drawn - loaded:.2f} s, "
              f"in all {drawn - started:.2f} s (target: under 5 s)")


if __name__ == "__main__":
    main()
