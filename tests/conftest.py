"""Shared fixtures: rendered workspaces (rendered once per session, copied per test)."""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import sys
from pathlib import Path

import pytest

from grader.course.render import render

FIXTURES = Path(__file__).parent / "fixtures"


# Heavy gradings and builds, left out by `python -m pytest -m "not slow"` (a quick run for authors).
SLOW_FILES = {"test_wrong_solutions.py", "test_alternatives.py", "test_devcheck.py", "test_walk_to_lesson_8.py", "test_autograder.py",
              "test_class_attacks.py", "test_machines.py",
              "test_packaging.py", "test_workflow.py", "test_board_browser.py", "test_fuzz_tools.py", "test_bulk.py"}


@pytest.fixture(autouse=True)
def sigint_as_a_terminal_gives_it():
    """Every test starts with SIGINT as a terminal gives it, and children inherit that. Two things take it away: a
    shell that starts a background job without job control (a CI runner, `cmd &` in a script) sets it to ignored, and
    a command run in-process that was interrupted leaves it ignored (grader.ctrl_c.stop, so a second Ctrl-C on the
    way out changes nothing). Either way the Ctrl-C tests would send a signal nobody hears."""
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        with contextlib.suppress(ValueError):  # not the main thread: not ours to set
            signal.signal(signal.SIGINT, signal.default_int_handler)
    yield


def pytest_collection_modifyitems(items) -> None:
    for item in items:
        if item.path.name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session", autouse=True)
def template_cache(tmp_path_factory):
    """Keep the kit's template repository (grader.template_repo) out of the real user cache, and give this
    session (each xdist worker has its own) a temp folder of its own: "nothing left behind" checks see only theirs."""
    os.environ["WORKSHOP_CACHE"] = str(tmp_path_factory.mktemp("cache"))
    os.environ["TMPDIR"] = str(tmp_path_factory.mktemp("tmp"))
    tempfile.tempdir = None  # read TMPDIR again


@pytest.fixture(scope="session")
def rendered(tmp_path_factory):
    """rendered(lesson, solved) -> a pristine workspace path, shared: copy it before changing it."""
    cache: dict[tuple[int, bool], Path] = {}

    def get(lesson: int, solved: bool = False) -> Path:
        if (lesson, solved) not in cache:
            cache[lesson, solved] = render(lesson, tmp_path_factory.mktemp(f"lesson{lesson}{'s' if solved else ''}") / "ws", solved)
        return cache[lesson, solved]

    return get


@pytest.fixture
def workspace(rendered, tmp_path):
    """workspace(lesson, solved) -> a private copy of a rendered workspace."""

    def make(lesson: int, solved: bool = False) -> Path:
        target = tmp_path / f"ws-{lesson}{'-solved' if solved else ''}"
        shutil.copytree(rendered(lesson, solved), target)
        return target

    return make


@pytest.fixture(scope="session")
def started_once(tmp_path_factory):
    """started_once(lesson, solved) -> a pristine workspace as `workshop start` makes it (git history and all), made
    once per session and shared: copy it before changing it."""
    from grader.commands.start import start_workspace

    cache: dict[tuple[int, bool], Path] = {}

    def get(lesson: int, solved: bool = False) -> Path:
        if (lesson, solved) not in cache:
            folder = tmp_path_factory.mktemp(f"started{lesson}{'s' if solved else ''}")
            cache[lesson, solved] = start_workspace(lesson, folder / f"rover-{lesson}", solved)
        return cache[lesson, solved]

    return get


@pytest.fixture
def started(started_once, tmp_path, monkeypatch):
    """started(lesson, solved=False, where=None) -> a private copy of a workspace `workshop start` made, in `where`
    (default: the test's folder), with the cwd inside it."""

    def make(lesson: int, solved: bool = False, where: Path | None = None) -> Path:
        target = (where or tmp_path) / f"rover-{lesson}"
        shutil.copytree(started_once(lesson, solved), target, symlinks=True)
        monkeypatch.chdir(target)
        return target

    return make


@pytest.fixture
def solved_rover(rendered, monkeypatch):
    """Import the reference Rover (all lessons solved) as `rover`, for calling tools directly."""
    root = rendered(max_lesson(), True)
    monkeypatch.setenv("ROVER_ANSWERS", "y")  # from lesson 6 the gate asks about unlisted commands: say yes, as the grader does
    monkeypatch.syspath_prepend(str(root))
    for name in [name for name in sys.modules if name == "rover" or name.startswith("rover.")]:
        monkeypatch.delitem(sys.modules, name)
    import rover.tools

    return rover.tools


def grade_fairly(root: Path, checks: list) -> list:
    """run_checks, with the checks the machine (not the code) spoiled, marked "too busy", graded once more, alone, in
    one lane. The second verdict stands; a check still too busy then is skipped, never counted as a verdict either way.
    A failure is never graded again: a valid solution that fails, fails the test."""
    from grader.grading.runner import run_checks

    outcomes = run_checks(root, checks)
    doubtful = [outcome.check for outcome in outcomes if outcome.busy]
    if doubtful:
        regraded = {outcome.check.id: outcome for outcome in run_checks(root, doubtful, jobs=1)}
        outcomes = [regraded.get(outcome.check.id, outcome) for outcome in outcomes]
    if any(outcome.busy for outcome in outcomes):
        pytest.skip(f"the machine was too busy to grade {[outcome.check.id for outcome in outcomes if outcome.busy]}, twice")
    return outcomes


def next_passing(run):
    """`workshop next` (through the test's `run`) on a lesson that passes. It grades first, and a grade the machine
    spoiled (too busy, or a bash check that times the tool by the wall clock made late) refuses: run it once more, as
    a student would."""
    moved = run("next")
    if moved.exit_code == 2 and ("too busy" in moved.output or "failing check" in moved.output):
        moved = run("next")
    return moved


def max_lesson() -> int:
    from grader.course import kit

    return len(kit.lessons()) - 1


@pytest.fixture
def store(tmp_path):
    """A class board's SQLite store in the test's own folder."""
    from grader.classroom.store import Store

    store = Store(tmp_path / "class.sqlite")
    yield store
    store.close()
