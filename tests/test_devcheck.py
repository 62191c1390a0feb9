"""`workshop dev check` on the real course, and on a course with a check that cannot fail."""
from __future__ import annotations

from click.testing import CliRunner

from grader.grading import checks
from grader.cli import main


def test_the_course_passes_its_own_dev_check():
    result = CliRunner().invoke(main, ["dev", "check"])
    assert result.exit_code == 0, result.output
    assert "lesson-0" in result.output and "lesson-1" in result.output


def test_a_check_that_passes_on_the_stub_is_reported(monkeypatch):
    checks.load(1)
    monkeypatch.setitem(checks.REGISTRY, "read.missing", lambda lab: None)  # asserts nothing
    monkeypatch.setattr("grader.grading.runner.run_checks", _in_process_runner)
    monkeypatch.setattr("grader.commands.dev.run_checks", _in_process_runner)
    result = CliRunner().invoke(main, ["dev", "check", "--lesson", "1"])
    assert result.exit_code == 1
    assert "read.missing passes on the stub" in result.output


def _in_process_runner(workspace, check_list, **_):
    """Runs checks in this process, so a monkeypatched registry is seen (the real runner forks fresh workers)."""
    import sys
    import tempfile
    from pathlib import Path

    from grader.grading.runner import Outcome

    for name in [name for name in sys.modules if name == "rover" or name.startswith("rover.")]:
        del sys.modules[name]
    sys.path.insert(0, str(workspace))
    outcomes = []
    try:
        for check in check_list:
            checks.load(check.lesson)
            with tempfile.TemporaryDirectory() as tmp:
                try:
                    checks.REGISTRY[check.id](checks.Lab(workspace, Path(tmp)))
                    outcomes.append(Outcome(check, "passed"))
                except Exception as failure:
                    outcomes.append(Outcome(check, "failed", str(failure)))
    finally:
        sys.path.remove(str(workspace))
        for name in [name for name in sys.modules if name == "rover" or name.startswith("rover.")]:
            del sys.modules[name]
    return outcomes


def test_one_lesson_alone_even_one_that_reuses_another_lessons_helpers():
    result = CliRunner().invoke(main, ["dev", "check", "--lesson", "4"])
    assert result.exit_code == 0, result.output
    assert "lesson-4" in result.output and "lesson-0" not in result.output
