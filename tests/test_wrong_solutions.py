"""Every plausible wrong solution in fixtures/wrong_solutions.toml is caught by the checks it names."""
from __future__ import annotations

import pytest

from grader.course import fixtures, kit
from tests.conftest import grade_fairly

CASES = fixtures.load(fixtures.WRONG)


@pytest.mark.parametrize("case", CASES, ids=[case.label for case in CASES])
def test_wrong_solution_is_caught(workspace, case):
    root = workspace(case.lesson, solved=True)
    case.apply(root)
    named = [check for check in kit.lesson(case.lesson).checks if check.id in case.catches]
    assert named and len(named) == len(case.catches), f"unknown check ids in {case.catches}"
    outcomes = grade_fairly(root, named)  # a check the machine was too busy to finish has caught nothing
    still_passing = [outcome.check.id for outcome in outcomes if outcome.passed]
    assert not still_passing, f"{case.name!r} slipped through {still_passing}"
    for outcome in outcomes:
        missing = [word for word in case.says if word not in outcome.message]
        assert not missing, f"{case.name!r}: {outcome.check.id} should say {missing}, said {outcome.message!r}"


def test_every_check_is_shown_to_catch_some_wrong_solution():
    caught = {check_id for case in CASES for check_id in case.catches}
    uncovered = [check.id for lesson in kit.lessons() for check in lesson.checks if check.id not in caught]
    assert not uncovered, f"no wrong solution in fixtures/wrong_solutions.toml shows these checks can fail: {uncovered}"
