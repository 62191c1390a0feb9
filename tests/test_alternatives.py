"""Every valid alternative in fixtures/alternatives.toml passes every check it can reach, of lessons 0..N."""
from __future__ import annotations

import pytest

from grader.course import fixtures, kit
from grader.grading.grade import checks_up_to
from tests.conftest import grade_fairly

CASES = fixtures.load(fixtures.ALTERNATIVES)


def reachable(case: fixtures.Case) -> list:
    """The checks an alternative must pass. A tool's own module (one with an INPUT_SCHEMA: read, bash, edit, write,
    search) is reached by the checks of the lesson that teaches it, by the case's lesson's (its scenario may call the
    tool) and by the loop's (lesson 0 offers every tool's schema), never by the other earlier lessons' checks, which
    call only their own tools. Anything else (the loop, the gate, the repair, the context) sits on every call: every
    check of lessons 0..N."""
    source = kit.root() / "solutions" / case.file
    if case.file.startswith("rover/tools/") and source.is_file() and "\nINPUT_SCHEMA" in source.read_text(encoding="utf-8"):
        lessons = sorted({0, case.lesson} | {lesson.number for lesson in kit.lessons()[:case.lesson + 1] if lesson.file == case.file})
        return [check for number in lessons for check in kit.lesson(number).checks]
    return checks_up_to(case.lesson)


@pytest.mark.parametrize("case", CASES, ids=[case.label for case in CASES])
def test_alternative_passes_every_check(workspace, case):
    root = workspace(case.lesson, solved=True)
    case.apply(root)
    # a check the machine was too busy to finish is graded once more, alone; a failure stands
    failures = [f"{outcome.check.id} ({outcome.status}): {outcome.message}"
                for outcome in grade_fairly(root, reachable(case)) if not outcome.passed]
    assert not failures, f"{case.name!r} is valid but was rejected:\n" + "\n".join(failures)


def test_only_a_tools_own_module_is_spared_the_earlier_lessons():
    spared = {case.file for case in CASES if len(reachable(case)) < len(checks_up_to(case.lesson))}
    # read is lesson 1: only the loop comes before it, so it is spared nothing
    assert spared == {f"rover/tools/{tool}.py" for tool in ("bash", "edit", "write", "search")}, spared
    edit_in_lesson_5 = next(case for case in CASES if case.lesson == 5 and case.file == "rover/tools/edit.py")
    assert set(kit.lesson(3).checks) <= set(reachable(edit_in_lesson_5)), "edit's own lesson reaches an edit.py of lesson 5"


def test_an_alternative_is_a_whole_file_or_replacements_not_both():
    for case in CASES:
        assert (case.content is None) != (not case.replace), f"{case.label}: give `content` or `replace`, one of them"
        assert not case.catches, f"{case.label}: an alternative must pass every check; `catches` belongs in wrong_solutions.toml"
