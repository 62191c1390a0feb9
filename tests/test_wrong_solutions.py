"""Every plausible wrong solution in fixtures/wrong_solutions.toml is caught by the checks it names."""
from __future__ import annotations

import sys

import pytest

from grader.course import kit
from grader.grading.runner import run_checks
from tests.conftest import FIXTURES

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

WRONG = tomllib.loads((FIXTURES / "wrong_solutions.toml").read_text(encoding="utf-8"))
CASES = [(int(key.removeprefix("lesson-")), case) for key, cases in WRONG.items() for case in cases]


@pytest.mark.parametrize(("lesson", "case"), CASES, ids=[f"lesson-{n}: {case['name']}" for n, case in CASES])
def test_wrong_solution_is_caught(workspace, lesson, case):
    root = workspace(lesson, solved=True)
    target = root / case.get("file", kit.lesson(lesson).file)
    source = target.read_text(encoding="utf-8")
    for old, new in case["replace"]:
        assert old in source, f"fixture out of date: {old!r} is not in {target.relative_to(root)}"
        source = source.replace(old, new)
    target.write_text(source, encoding="utf-8")

    named = [check for check in kit.lesson(lesson).checks if check.id in case["catches"]]
    assert len(named) == len(case["catches"]), f"unknown check ids in {case['catches']}"
    outcomes = run_checks(root, named)
    still_passing = [outcome.check.id for outcome in outcomes if outcome.passed]
    assert not still_passing, f"{case['name']!r} slipped through {still_passing}"


def test_every_check_is_shown_to_catch_some_wrong_solution():
    caught = {check_id for _, case in CASES for check_id in case["catches"]}
    uncovered = [check.id for lesson in kit.lessons() for check in lesson.checks if check.id not in caught]
    assert not uncovered, f"no wrong solution in fixtures/wrong_solutions.toml shows these checks can fail: {uncovered}"
