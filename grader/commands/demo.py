"""`workshop demo [lesson-N]`: replay a lesson's scripted scenario through the student's own Rover.

Offline and repeatable: it runs on a fresh copy of pristine stash in a temporary folder, so a
projector demo can run twice in a row and the workspace's own stash is never touched. The run is
recorded (to --transcript FILE, or a scratch file), which draws a context bar under each reply.
`--compare` records two runs instead and draws them side by side (demo_compare).
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

from grader.commands.demo_compare import compare as compare_runs
from grader.commands.screen import missing_file, missing_said, say
from grader.course import kit
from grader.errors import WorkshopError
from grader.course.render import PRISTINE
from grader.course.workspace import here


@click.command("demo")
@click.argument("lesson_id", required=False, metavar="[lesson-N]")
@click.option("--transcript", metavar="FILE", help="Save the run's transcript here (`workshop transcript FILE` draws it).")
@click.option("--quiet-tokens", is_flag=True, help="No context bar after each reply; one token total at the end.")
@click.option("--compare", is_flag=True, help="Lessons 3 and 8: record the task done two ways and draw them side by side.")
@click.option("--html", metavar="OUT", help="With --compare: where to write the page (default lesson-N-compare.html).")
def demo_command(lesson_id: str | None, transcript: str | None, quiet_tokens: bool, compare: bool, html: str | None) -> None:
    """Replay a lesson's scenario with your own tools and the live transcript."""
    try:
        number = kit.parse_lesson_id(lesson_id) if lesson_id else None
    except kit.UnknownLesson as problem:
        raise WorkshopError(str(problem)) from None
    if html and not compare:
        raise WorkshopError("--html goes with --compare (the page of two runs); for one run, `workshop transcript FILE --html OUT`")
    if compare:
        return compare_runs(number if number is not None else here().lesson, Path(html) if html else None)
    workspace = here()
    number = workspace.lesson if number is None else number
    if transcript and not Path(transcript).resolve().parent.is_dir():
        raise WorkshopError(f"--transcript {transcript}: the folder {Path(transcript).parent} does not exist; make it first")
    if number > workspace.lesson:
        raise WorkshopError(f"lesson-{number}'s demo needs tools this workspace does not have yet (it is at lesson-{workspace.lesson})")
    gone = missing_file(workspace.path)
    if gone:
        raise WorkshopError(missing_said(gone, workspace.path))
    lesson = kit.lesson(number)
    with tempfile.TemporaryDirectory(prefix="workshop-demo-") as scratch:
        stash = Path(shutil.copytree(kit.root() / "stash", Path(scratch) / "stash", ignore=PRISTINE))
        say(f"Demo of lesson {number} ({lesson.title}): {lesson.scenario}, on a fresh copy of stash.")
        click.echo()
        # The person's part of the script, for lesson 6's gate; scripts recorded before the gate expect a yes.
        answers = json.loads(lesson.script.read_text(encoding="utf-8")).get("answers", ["y"])
        done = subprocess.run(
            [sys.executable, "-m", "rover", lesson.scenario, "--model", f"scripted:{lesson.script}", "--cwd", str(stash),
             "--transcript", str(Path(transcript).resolve() if transcript else Path(scratch) / "transcript.json"),
             *(["--quiet-tokens"] if quiet_tokens else [])],
            cwd=workspace.path, env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "ROVER_ANSWERS": ",".join(answers),
                                     # the script's `python -m pytest` is this Python (stash's packages), venv active or not
                                     "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")},
            stderr=subprocess.PIPE, text=True, errors="replace",  # the transcript is stdout, live; Rover's last word is read
        )
    unwritten = re.search(r"The (\w+) tool is not written yet", done.stderr or "")
    if done.returncode and unwritten:
        say(not_written_yet(unwritten[1], number), err=True)
    elif done.stderr:
        sys.stderr.write(done.stderr)
    if transcript and done.returncode == 0:
        say(f"transcript: {transcript} (`workshop transcript {transcript}` draws it)")
    sys.exit(done.returncode)


def not_written_yet(tool: str, demo: int) -> str:
    """Why lesson `demo`'s replay stopped: a tool it uses is still its stub. Which one, and the demo that runs now."""
    owner = next((lesson for lesson in kit.lessons() if lesson.tool == tool), None)
    where = f" ({owner.file}, lesson {owner.number})" if owner else ""
    works = f"; `workshop demo lesson-{owner.number - 1}` runs now" if owner and owner.number > 0 else ""
    return (f"workshop: lesson {demo}'s demo stopped where Rover called the {tool} tool, which is not written yet{where}: "
            f"write it (`workshop check` says what is missing) and run the demo again{works}.")
