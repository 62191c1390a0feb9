"""`workshop demo lesson-N --compare`: the same task done two ways, recorded offline and drawn side by side.

Lesson 3: the parse_date fix by `edit` against the same fix by `write` (the whole file sent back). Lesson 8: the
30-turn scenario with the context budget and without it. Both runs use the kit's reference Rover (a solved
render of the last lesson), since `write` arrives after lesson 3 and a student's `trim` may not be written yet,
and both scripts are replayed without their recorded usage, so both are counted by the same offline estimate.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import click

from grader.commands.screen import say
from grader.commands.transcript import show, write_page
from grader.course import kit
from grader.course.render import PRISTINE, render
from grader.errors import WorkshopError

# (label, script beside the lesson's scenario.json, whether the run drops the context budget)
PAIRS = {3: (("edit", "scenario.json", False), ("write", "scenario-write.json", False)),
         8: (("with-budget", "scenario.json", False), ("without-budget", "scenario.json", True))}
NO_BUDGET = "BUDGET = 10**12  # workshop demo --compare: the run without a budget"


def compare(number: int, out: Path | None) -> None:
    if number not in PAIRS:
        raise WorkshopError(f"lesson-{number} has no comparison; --compare is for lesson-3 (edit vs write) "
                            "and lesson-8 (with and without the budget)")
    out = out or Path(f"lesson-{number}-compare.html")
    if not out.resolve().parent.is_dir():
        raise WorkshopError(f"--html {out}: the folder {out.parent} does not exist; make it first, or write elsewhere")
    lesson = kit.lesson(number)
    say(f"Recording lesson {number}'s scenario two ways ({' and '.join(label for label, *_ in PAIRS[number])}), "
        "offline, with the kit's reference Rover.")
    with tempfile.TemporaryDirectory(prefix="workshop-compare-") as scratch:
        rover = render(len(kit.lessons()) - 1, Path(scratch) / "rover", solved=True)
        files, labels = [], []
        for label, script, unbudgeted in PAIRS[number]:
            if unbudgeted:
                _drop_budget(rover / "rover" / "context.py")
            transcript = out.with_name(f"{out.stem}-{label}.json")  # kept beside the page: `workshop transcript` opens it
            files.append(_record(rover, lesson.script.with_name(script), lesson.scenario, transcript, Path(scratch) / label))
            labels.append(label)
        page = write_page(files, out, labels)
    show(page)


def _record(rover: Path, script: Path, task: str, transcript: Path, scratch: Path) -> Path:
    """One replay of `script` on a fresh stash (in `scratch`), its transcript written to `transcript`."""
    loaded = json.loads(script.read_text(encoding="utf-8"))
    turns = [{key: value for key, value in turn.items() if key != "usage"} for turn in loaded["turns"]]
    scratch.mkdir()
    plain, stash = scratch / "script.json", scratch / "stash"
    plain.write_text(json.dumps({"turns": turns}), encoding="utf-8")
    shutil.copytree(rover / "stash", stash, ignore=PRISTINE)
    done = subprocess.run(
        [sys.executable, "-m", "rover", task, "--model", f"scripted:{plain}", "--cwd", str(stash), "--quiet",
         "--transcript", str(transcript.resolve())],
        cwd=rover, capture_output=True, text=True,
        env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "ROVER_ANSWERS": ",".join(loaded.get("answers", ["y"])),
             "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")},
    )
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise WorkshopError(f"the {scratch.name} run stopped (exit {done.returncode}): {why}")
    requests = json.loads(transcript.read_text(encoding="utf-8"))["requests"]
    sent = sum(sum(int(request["usage"].get(key) or 0) for key in ("input_tokens", "cache_read_input_tokens",
                                                                   "cache_creation_input_tokens")) for request in requests)
    click.echo(f"  {scratch.name}: {len(requests)} requests, {sent:,} input tokens in all; transcript {transcript}")
    return transcript


def _drop_budget(context: Path) -> None:
    text, found = re.subn(r"(?m)^BUDGET = .*$", NO_BUDGET, context.read_text(encoding="utf-8"), count=1)
    if not found:
        raise WorkshopError(f"{context} has no `BUDGET = ...` line to raise for the run without a budget")
    context.write_text(text, encoding="utf-8")
