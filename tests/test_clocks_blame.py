"""The student's own checks competing for the cores are the student's load, never "the machine was too busy"."""
from __future__ import annotations

import pytest

from grader.course import kit
from grader.grading.runner import run_checks

LOOP = "def run(cwd: Path, path: str, offset: int = 1, limit: int | None = None) -> ToolResult:\n"


def test_an_endless_loop_hit_by_every_check_of_lesson_1_is_named_not_blamed_on_the_machine(workspace):
    root = workspace(1, solved=True)
    tool = root / "rover" / "tools" / "read.py"
    source = tool.read_text()
    assert LOOP in source
    tool.write_text(source.replace(LOOP, LOOP + "    while offset > 0:\n        pass\n"))
    line = source[: source.index(LOOP)].count("\n") + 2  # the loop's own line
    checks = [check for check in kit.lesson(1).checks if check.id != "read.stash-scenario"]
    outcomes = run_checks(root, checks, time_limit=2.0)
    looped = [outcome for outcome in outcomes if outcome.status == "timeout"]
    assert len(looped) >= len(checks) - 2, [(outcome.check.id, outcome.status, outcome.message) for outcome in outcomes]
    assert not [outcome for outcome in outcomes if outcome.busy], "the code's own loops were the load, not the machine"
    for outcome in looped:
        assert any(f"rover/tools/read.py line {at}" in outcome.message for at in (line, line + 1)), outcome.message  # while, or pass
        assert "endless loop" in outcome.message
