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


# The proofs: tests that prove the whole course (every alternative passes, every wrong solution is caught) or the
# boundary against its costliest attacks. `python -m pytest` runs a seeded sample of them beside every other test;
# `--proofs=all` runs every one (CI does), `--proofs=none` none. Each group keeps SAMPLE[group] of its tests.
SAMPLE = {"alternatives": 3, "wrong solutions": 1, "attacks": 1, "walks": 0}  # wrong solutions: per lesson; the others in all
# walks: none (each is eight copier updates, ~55 CPU s); test_student_day and test_real_life move one lesson at a time
PROOF_TESTS = {  # file -> (group, the test functions that are proofs: None for every one in the file)
    "test_alternatives.py": ("alternatives", {"test_alternative_passes_every_check"}),
    "test_wrong_solutions.py": ("wrong solutions", {"test_wrong_solution_is_caught"}),
    "test_class_attacks.py": ("attacks", None),
    "test_devcheck.py": ("attacks", {"test_the_course_passes_its_own_dev_check"}),
    "test_walk_to_lesson_8.py": ("walks", None),  # the whole course, lesson 0 to 8, one `next` (a copier update) at a time
    "test_student_day.py": ("walks", {"test_the_whole_course_with_start_check_apply_and_next"}),
    "test_machines.py": ("attacks", {"test_verdicts_are_the_same_with_the_linux_extras_off"}),
    "test_under_load.py": ("attacks", None),
    "test_clocks_blame.py": ("attacks", None),
}
FUZZ_FILES = {"test_fuzz_tools.py"}  # every run fuzzes, on a quarter of the inputs but under --proofs=all
HEAVY_ATTACK_FILES = {"test_sandbox.py", "test_start_modes.py"}  # there, the tests marked slow are the proofs
SEED = "WORKSHOP_PROOFS_SEED"  # how the seed reaches xdist's workers, which must all draw the same sample


def pytest_addoption(parser) -> None:
    group = parser.getgroup("workshop")
    group.addoption("--proofs", choices=("sample", "all", "none"), default="sample",
                    help="the course's and the boundary's proofs: a seeded sample (default), all of them, or none")
    group.addoption("--proofs-seed", type=int, default=None, help="the seed of the sample (printed by every run)")


def pytest_configure(config) -> None:
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist) draws the seed once
        seed = config.getoption("proofs_seed")
        os.environ[SEED] = str(seed if seed is not None else int.from_bytes(os.urandom(2), "big"))


def proof_group(item) -> str | None:
    """The proof group an item belongs to, or None if it is not a proof (and so runs in every tier)."""
    name, function = item.path.name, getattr(item, "originalname", item.name)
    if name in PROOF_TESTS:
        group, functions = PROOF_TESTS[name]
        return group if functions is None or function in functions else None
    if name in HEAVY_ATTACK_FILES and item.get_closest_marker("slow"):
        return "attacks"
    return None


def _sample(items: list, seed: int) -> list:
    """The proofs this seed keeps: SAMPLE[group] of each group (per lesson for the wrong solutions, and the
    alternatives from as many lessons as they are), drawn the same way in every process for the same collection."""
    import random

    chance = random.Random(seed)
    pools: dict[str, list] = {}
    for item in sorted(items, key=lambda item: item.nodeid):
        group = proof_group(item)
        if group == "wrong solutions":
            group = f"{group} of lesson {item.callspec.params['case'].lesson}"
        pools.setdefault(group, []).append(item)
    kept = []
    for group, pool in sorted(pools.items()):
        size = SAMPLE[group.split(" of lesson")[0]]
        if group == "alternatives":  # one lesson each, as far as the lessons go
            by_lesson: dict[int, list] = {}
            for item in pool:
                by_lesson.setdefault(item.callspec.params["case"].lesson, []).append(item)
            lessons = chance.sample(sorted(by_lesson), min(size, len(by_lesson)))
            kept += [chance.choice(by_lesson[lesson]) for lesson in lessons]
        else:
            kept += chance.sample(pool, min(size, len(pool)))
    return kept


def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        if item.path.name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
        if proof_group(item):
            item.add_marker(pytest.mark.proof)
    tier = config.getoption("proofs")
    if tier == "all":
        for item in items:  # drawn in full, the fuzzing is a proof too: `-m proof --proofs=all` (CI) runs it
            if item.path.name in FUZZ_FILES:
                item.add_marker(pytest.mark.proof)
        return
    proofs = [item for item in items if proof_group(item)]
    kept = set(_sample(proofs, int(os.environ[SEED]))) if tier == "sample" else set()
    left_out = [item for item in proofs if item not in kept]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        dropped = set(left_out)
        items[:] = [item for item in items if item not in dropped]


def pytest_report_collectionfinish(config, start_path, items):
    return _tier_line(config)


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    terminalreporter.write_line(_tier_line(config))


def _tier_line(config) -> str:
    tier, seed = config.getoption("proofs"), os.environ.get(SEED, "?")
    if tier == "all":
        return "proofs: all of them (--proofs=all)"
    if tier == "none":
        return "proofs: none (--proofs=none); `--proofs=all` runs every one"
    return (f"proofs: a sample, seed {seed} (`--proofs-seed={seed}` draws it again; `--proofs=all` runs every "
            "alternative, wrong solution and heavy attack)")


@pytest.fixture(scope="session", autouse=True)
def template_cache(tmp_path_factory):
    """Keep the kit's template repository (grader.template_repo) out of the real user cache, and give this
    session (each xdist worker has its own) a temp folder of its own: "nothing left behind" checks see only theirs."""
    os.environ["WORKSHOP_CACHE"] = str(tmp_path_factory.mktemp("cache"))
    os.environ["TMPDIR"] = str(tmp_path_factory.mktemp("tmp"))
    tempfile.tempdir = None  # read TMPDIR again


@pytest.fixture(scope="session")
def warm_rover():
    """A helper that has the anthropic SDK imported, forking each live `python -m rover` (tests.warm_rover)."""
    from tests.warm_rover import WarmRover

    helper = WarmRover()
    yield helper
    helper.close()


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
