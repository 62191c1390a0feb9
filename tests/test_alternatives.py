"""Every valid alternative in fixtures/alternatives.toml passes every check of lessons 0..N."""
from __future__ import annotations

import pytest

from grader.course import fixtures
from grader.grading.grade import checks_up_to
from grader.grading.runner import run_checks

CASES = fixtures.load(fixtures.ALTERNATIVES)


@pytest.mark.parametrize("case", CASES, ids=[case.label for case in CASES])
def test_alternative_passes_every_check(workspace, case):
    root = workspace(case.lesson, solved=True)
    case.apply(root)
    failures = [f"{outcome.check.id} ({outcome.status}): {outcome.message}"
                for outcome in run_checks(root, checks_up_to(case.lesson)) if not outcome.passed]
    assert not failures, f"{case.name!r} is valid but was rejected:\n" + "\n".join(failures)


def test_an_alternative_is_a_whole_file_or_replacements_not_both():
    for case in CASES:
        assert (case.content is None) != (not case.replace), f"{case.label}: give `content` or `replace`, one of them"
        assert not case.catches, f"{case.label}: an alternative must pass every check; `catches` belongs in wrong_solutions.toml"
