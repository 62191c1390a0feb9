"""Shared fixtures: rendered workspaces (rendered once per session, copied per test)."""
from __future__ import annotations

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
              "test_packaging.py", "test_workflow.py", "test_board_browser.py", "test_fuzz_tools.py", "test_bulk.py"}


# A shell that starts a background job without job control (a CI runner, `cmd &` in a script) sets it to ignore
# SIGINT, and children inherit that: the Ctrl-C tests would send a signal nobody hears. Take it back, so the commands
# under test start with SIGINT as a terminal gives it.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


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
