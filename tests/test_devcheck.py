"""`workshop dev check` on the real course, and on a course with a check that cannot fail."""
from __future__ import annotations

from click.testing import CliRunner

from grader.cli import main
from grader.course import fixtures
from grader.grading import checks


def test_the_course_passes_its_own_dev_check():
    # the fixtures are proven case by case in test_wrong_solutions.py and test_alternatives.py
    result = CliRunner().invoke(main, ["dev", "check", "--no-fixtures"])
    assert result.exit_code == 0, result.output
    assert "lesson-0" in result.output and "lesson-1" in result.output


def test_a_wrong_solution_that_slips_through_and_a_rejected_alternative_are_reported(monkeypatch, tmp_path):
    (tmp_path / "wrong_solutions.toml").write_text('''
[[lesson-0]]
name = "changes only a docstring"
replace = [["That is the whole agent.", "That is all."]]
catches = ["loop.end-turn"]

[[lesson-0]]
name = "returns nothing at the end"
replace = [["                return final_text(reply)", "                return None"]]
catches = ["loop.end-turn"]
''', encoding="utf-8")
    (tmp_path / "alternatives.toml").write_text('''
[[lesson-0]]
name = "sends only the last message"
replace = [["self.model.complete(self.system, self.messages, schemas())", "self.model.complete(self.system, self.messages[-1:], schemas())"]]

[[lesson-0]]
name = "a stale fixture"
replace = [["text that is not there", "x"]]
''', encoding="utf-8")
    monkeypatch.setattr(fixtures, "folder", lambda: tmp_path)
    result = CliRunner().invoke(main, ["dev", "check", "--lesson", "0"])
    assert result.exit_code == 1, result.output
    assert "wrong solution 'changes only a docstring' slips through loop.end-turn" in result.output
    assert "returns nothing at the end" not in result.output
    assert "alternative 'sends only the last message' fails loop.history" in result.output
    assert "fixture out of date: lesson-0: a stale fixture" in result.output


def test_a_check_that_passes_on_the_stub_is_reported(monkeypatch):
    checks.load(1)
    monkeypatch.setitem(checks.REGISTRY, "read.missing", lambda lab: None)  # asserts nothing
    monkeypatch.setattr("grader.grading.runner.run_checks", _in_process_runner)
    monkeypatch.setattr("grader.commands.dev.run_checks", _in_process_runner)
    result = CliRunner().invoke(main, ["dev", "check", "--lesson", "1", "--no-fixtures"])
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
                lab = checks.Lab.in_process(workspace, Path(tmp))
                try:
                    checks.REGISTRY[check.id](lab)
                    outcomes.append(Outcome(check, "passed"))
                except Exception as failure:
                    outcomes.append(Outcome(check, "failed", str(failure)))
                finally:
                    lab.close()
    finally:
        sys.path.remove(str(workspace))
        for name in [name for name in sys.modules if name == "rover" or name.startswith("rover.")]:
            del sys.modules[name]
    return outcomes


def test_one_lesson_alone_even_one_that_reuses_another_lessons_helpers():
    # its wrong solutions and alternatives are proven case by case in test_wrong_solutions.py and test_alternatives.py
    result = CliRunner().invoke(main, ["dev", "check", "--lesson", "4", "--no-fixtures"])
    assert result.exit_code == 0, result.output
    assert "lesson-4" in result.output and "lesson-0" not in result.output


def test_every_lesson_traces_its_requirements_to_checks():
    from grader.commands.dev import trace_problems
    from grader.course import kit

    problems = {lesson.id: trace_problems(lesson) for lesson in kit.lessons()}
    assert not any(problems.values()), problems
    assert all(lesson.requirements() for lesson in kit.lessons())


def test_tracing_reports_an_untested_requirement_an_uncited_check_and_a_demand_the_text_does_not_make(tmp_path):
    from grader.commands.dev import trace_problems
    from grader.course import kit

    (tmp_path / "README.md").write_text(
        "# Lesson 1\n\nSay `No matches found` when nothing matched. [R1.1]\n\n"
        "- Lines come back numbered, and the notice\n  follows a blank line: [R1.2]\n\n"
        "      [Showing lines 1-2 of 3. Use offset=3 to continue.]\n\n"
        "A sentence nobody tests. [R1.3] Tagged twice. [R1.1]\n", encoding="utf-8")
    (tmp_path / "requirements.toml").write_text(
        '["R1.1"]\nchecks = ["read.missing"]\ndemands = ["No matches found", "not an error"]\n\n'
        '["R1.2"]\nchecks = ["read.numbered", "read.nonexistent"]\ndemands = ["Use offset=3 to continue."]\n\n'
        '["R1.3"]\nchecks = []\n\n["R1.9"]\nchecks = ["read.binary"]\n', encoding="utf-8")

    class Fixture(kit.Lesson):
        text = property(lambda self: tmp_path / "README.md")
        requirements_table = property(lambda self: tmp_path / "requirements.toml")

    real = kit.lesson(1)
    problems = trace_problems(Fixture(1, real.title, real.tool, real.file, real.scenario, real.checks))
    assert "R1.1: tagged twice in the text" in problems
    assert "R1.1: its checks demand 'not an error', which its sentence does not say" in problems
    assert not any("'No matches found'" in problem or "Use offset=3" in problem for problem in problems)  # in the sentence, or its code block
    assert "R1.2: cites read.nonexistent, which is not a check of lesson-1" in problems
    assert "R1.3: no check tests it" in problems
    assert "R1.9: in requirements.toml, but no sentence of the text is tagged [R1.9]" in problems
    assert "read.line-cap: tests no requirement of the text (cite it in requirements.toml)" in problems
    assert "read.missing: tests no requirement of the text (cite it in requirements.toml)" not in problems
