"""`workshop start` and `workshop check` as a student runs them, through click's CliRunner."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

from grader.course import kit
from grader.cli import main


def run(*args: str, columns: int = 80):
    return CliRunner().invoke(main, list(args), catch_exceptions=False, env={"COLUMNS": str(columns)}, prog_name="workshop")


def words(text: str) -> str:
    """Text with its wrapping undone, to look for a sentence wherever the screen broke its lines."""
    return " ".join(text.split())


def test_start_renders_a_workspace_with_earlier_lessons_solved(tmp_path):
    target = tmp_path / "ws"
    result = run("start", "lesson-1", str(target))
    assert result.exit_code == 0, result.output
    assert "Lesson 1: read" in result.output
    assert (target / ".copier-answers.yml").read_text().count("lesson: 1") == 1
    assert (target / "rover/agent.py").read_bytes() == kit.lesson(0).solution.read_bytes()
    assert "NotImplementedError" in (target / "rover/tools/read.py").read_text()
    assert not (target / "rover/tools/bash.py").exists()
    assert (target / "stash/stash/extract.py").read_text().count("\n") == 22
    log = subprocess.run(["git", "log", "--oneline"], cwd=target, capture_output=True, text=True).stdout
    assert log.count("\n") == 1 and "Start lesson 1" in log
    status = subprocess.run(["git", "status", "--porcelain"], cwd=target, capture_output=True, text=True).stdout
    assert status == "", "everything rendered is in the first commit"


def test_start_solved_solves_the_current_lesson_too(tmp_path):
    assert run("start", "lesson-1", str(tmp_path / "ws"), "--solved").exit_code == 0
    assert (tmp_path / "ws/rover/tools/read.py").read_bytes() == kit.lesson(1).solution.read_bytes()


def test_start_defaults_the_folder_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run("start", "0").exit_code == 0
    assert (tmp_path / "rover-lesson-0/rover/agent.py").is_file()


def test_start_refuses_a_non_empty_folder_and_keeps_its_files(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    result = run("start", "lesson-0", str(tmp_path))
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and "not empty" in result.output
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_start_an_unknown_lesson_lists_the_lessons(tmp_path):
    result = run("start", "lesson-99", str(tmp_path / "ws"))
    assert result.exit_code == 2
    assert result.output.count("\n") == 1
    assert "lesson-0, lesson-1" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "ws").exists()


def test_check_json_on_a_fresh_lesson(workspace, monkeypatch):
    monkeypatch.chdir(workspace(1))
    result = run("check", "--json")
    assert result.exit_code == 1
    report = json.loads(result.output)
    assert set(report) == {"lesson", "passed", "score", "max_score", "sandbox", "checks"}
    assert report["lesson"] == 1 and report["passed"] is False
    loop, read = (
        [check for check in report["checks"] if check["lesson"] == number] for number in (0, 1)
    )
    assert all(check["status"] == "passed" and check["hints"] == [] for check in loop)
    assert all(check["status"] == "failed" and len(check["hints"]) >= 2 for check in read)
    assert report["score"] == len(loop) and report["max_score"] == len(loop) + len(read)
    assert set(report["checks"][0]) == {"id", "lesson", "title", "status", "message", "hints", "points"}


def test_check_passes_on_a_solved_workspace_and_writes_reports(workspace, monkeypatch, tmp_path):
    monkeypatch.chdir(workspace(1, solved=True))
    result = run("check", "--junit", str(tmp_path / "junit.xml"), "--gradescope", str(tmp_path / "gs.json"))
    assert result.exit_code == 0, result.output
    total = len(kit.lesson(0).checks) + len(kit.lesson(1).checks)
    assert f"All {total} checks pass" in result.output
    suite = ET.parse(tmp_path / "junit.xml").getroot()
    assert suite.get("tests") == str(total) and suite.get("failures") == "0"
    gradescope = json.loads((tmp_path / "gs.json").read_text())
    assert gradescope["score"] == sum(test["max_score"] for test in gradescope["tests"]) == len(kit.lesson(1).checks)  # lesson 1's own checks


def test_check_table_names_the_failure_and_the_hint_command(workspace, monkeypatch):
    monkeypatch.chdir(workspace(1))
    result = run("check")
    assert result.exit_code == 1
    assert "read.numbered" in result.output and "workshop hint read.numbered" in result.output.splitlines()[-1]
    assert "open rover/tools/read.py" in result.output, "a fresh lesson says which file is the student's to write"


def test_check_shows_the_current_lesson_in_full_and_earlier_ones_in_a_line(workspace, monkeypatch):
    monkeypatch.chdir(workspace(2))
    result = run("check")
    lines = result.output.splitlines()
    earlier = len(kit.lesson(0).checks) + len(kit.lesson(1).checks)
    assert f"lessons 0-1: {earlier}/{earlier} ✓" in lines
    first = kit.lesson(2).checks[0]
    assert f"  ✗ {first.id}" in result.output and words(first.hints[0]) in words(result.output), "the first failure is in full"
    rows = [line.split()[1] for line in lines if line.startswith(("  ✗ ", "  ✓ ", "  ⧗ ")) and "." in line.split()[1]]
    folded = next(line for line in lines if "checks: not written yet, in rover/tools/bash.py" in line)
    assert int(folded.split()[1]) + len(rows) == len(kit.lesson(2).checks), "every check is a row or in the folded line"
    assert set(rows) <= {check.id for check in kit.lesson(2).checks}, "only lesson 2's checks have rows"
    assert max(len(line.rstrip()) for line in lines) <= 80, "nothing runs past 80 columns"


STUB_LESSONS = [1] + [pytest.param(number, marks=pytest.mark.slow) for number in range(2, 9)]


def earlier_lessons_pass(monkeypatch) -> None:
    """Grade only the current lesson's checks for real; every earlier lesson's (solved in a stub workspace, and proven so
    by the course's own proofs) is a pass, as on the real screen: the screen's layout is under test, not lessons 0..N-1."""
    from grader.grading import grade as grading
    from grader.grading.runner import Outcome, Suite

    real = grading.run_suite

    def current_only(workspace, checks, **kwargs):
        current = max(check.lesson for check in checks)
        suite = real(workspace, [check for check in checks if check.lesson == current], **kwargs)
        found = {outcome.check.id: outcome for outcome in suite.outcomes}
        return Suite([found.get(check.id) or Outcome(check, "passed") for check in checks], suite.root_cause, suite.sandbox)

    monkeypatch.setattr(grading, "run_suite", current_only)


@pytest.mark.parametrize("lesson", STUB_LESSONS)
def test_a_stub_lesson_fits_one_screen_at_80_columns(workspace, monkeypatch, lesson):
    monkeypatch.chdir(workspace(lesson))
    earlier_lessons_pass(monkeypatch)
    result = run("check")
    lines = result.output.splitlines()
    assert result.exit_code == 1 and len(lines) <= 40, result.output
    assert all(len(line) <= 80 and line == line.rstrip() for line in lines), [line for line in lines if len(line) > 80 or line != line.rstrip()]
    titles = {check.id: check.title for number in range(lesson + 1) for check in kit.lesson(number).checks}
    rows = [number for number, line in enumerate(lines) if line.startswith(("  ✗ ", "  ✓ ")) and line.split()[1] in titles]
    for number in rows:  # a title too long for its row goes on under itself, at words, whole
        row, title = lines[number], titles[lines[number].split()[1]]
        column = len(row) - len(row.split(None, 2)[2])
        below = [line for line in lines[number + 1:number + 4] if len(line) > column and line[:column].isspace() and line[column] != " "]
        shown = " ".join([row[column:]] + [line.strip() for line in below])[:len(title)]
        assert shown == title and "…" not in row, f"{title!r} is not whole in {[row] + below}"
    first = result.output.split("\n  ✗ ", 1)[1].split("\n  ✗ ")[0]  # the first failure, with its message and hint
    check = next(check for check in kit.lesson(lesson).checks if first.startswith(check.id))
    assert f"hint: {words(check.hints[0])}" in words(first), "the first failure is shown in full, wrapped between words"
    assert lines[-1].startswith("Next: ") or lines[-2].startswith("Next: ")


def test_lesson_text_at_80_columns_wraps_prose_at_words_and_never_a_command():
    for lesson in kit.lessons():
        source = lesson.text.read_text(encoding="utf-8")
        shown = run("lesson", str(lesson.number)).output.splitlines()
        commands = re.findall(r"^ {4}(python -m rover .+)$", source, re.MULTILINE)
        assert commands, f"lesson {lesson.number} gives the command that replays its scenario"
        for command in commands:  # longer than the screen: it runs past the edge, whole, and copies whole
            assert f" {command}" in shown, f"lesson {lesson.number}: {command!r} is not on one line"
        code = {line.strip() for line in re.findall(r"^ {4,}(\S.*)$", source, re.MULTILINE)}
        long_spans = [span for span in re.findall(r"`([^`]+)`", source) if len(span) > 60]  # inline code never breaks
        for line in shown:
            assert len(line) <= 80 or line.strip() in code or any(span in line for span in long_spans), \
                f"lesson {lesson.number}: prose past 80 columns: {line!r}"
            if line.endswith("…") and len(line) == 80:  # a code line in a list, where there is no room: cut, visibly
                assert any(whole.startswith(line.strip()[:-1]) for whole in code), line
    listed = run("lesson", "2").output.splitlines()
    assert any(line.strip().startswith("[Showing lines 4001-6000") and line.endswith("…") for line in listed)
    assert max(len(line) for line in listed if "python -m rover" not in line) == 80


def test_long_messages_wrap_between_words():
    from rich.text import Text

    from grader.commands.screen import wrapped

    text = "alpha beta " * 12 + "`workshop hint read.numbered` and " + "x" * 100
    lines = [line.plain for line in wrapped(Text(text), 40, 4)]
    assert all(len(line) <= 40 and line == line.rstrip() for line in lines), lines
    assert all(line.startswith("    ") for line in lines[1:]), "continuation lines are indented"
    assert any(line.strip().startswith("`workshop hint read.numbered`") for line in lines), "a command is never split"
    shown, given = " ".join(lines).split(), text.split()
    assert shown[:len(given) - 1] == given[:-1], "no word is split"
    assert "".join(shown[len(given) - 1:]) == "x" * 100, "only a word longer than a line is cut"


def test_check_all_shows_every_row(workspace, monkeypatch):
    monkeypatch.chdir(workspace(2))
    rows = [line.split()[1] for line in run("check", "--all").output.splitlines() if line.startswith(("  ✗ ", "  ✓ "))]
    assert rows == [check.id for number in range(3) for check in kit.lesson(number).checks]


def test_a_regression_opens_its_lesson(workspace, monkeypatch):
    root = workspace(2, solved=True)
    monkeypatch.chdir(root)
    assert run("check").exit_code == 0  # lesson 1 passes: the kit remembers it did
    read = root / "rover/tools/read.py"
    read.write_text(read.read_text().replace(":>6}", ":>4}"))
    result = run("check")
    assert result.exit_code == 1
    loop = len(kit.lesson(0).checks)
    assert f"lesson 0: {loop}/{loop} ✓" in result.output and "lesson 1 (read):" in result.output
    assert "  ✗ read.numbered" in result.output and "  ✓ bash.output" in result.output
    assert "regression" in words(result.output.split("\n\n")[-1])


def test_a_syntax_error_is_shown_once_as_the_root_cause(workspace, monkeypatch):
    root = workspace(2)
    bash = root / "rover/tools/bash.py"
    line = bash.read_text().count("\n") + 1
    bash.write_text(bash.read_text() + "def oops(:\n")
    monkeypatch.chdir(root)
    result = run("check")
    assert result.exit_code == 1
    assert result.output.count(f"rover/tools/bash.py line {line}:") == 1, result.output
    assert f"{line:>4} | def oops(:" in result.output, "the line of code itself is shown"
    assert "✗ loop." not in result.output and "hint:" not in result.output
    assert result.output.splitlines()[-1].startswith(f"Next: fix rover/tools/bash.py line {line}")
    hint = run("hint")
    assert hint.exit_code == 0 and f"rover/tools/bash.py line {line}" in hint.output and "def oops(:" in hint.output
    assert not (root / ".git/workshop-hints.json").exists(), "no hint level is spent on it"
    status = run("status", columns=120)
    assert "not graded" in status.output and "regressed" not in status.output
    assert f"fix rover/tools/bash.py line {line}" in status.output


def test_the_graders_root_cause_is_used_when_it_gives_one():
    from grader.commands.screen import location, next_step, root_cause
    from grader.grading.grade import Grade
    from grader.grading.runner import Outcome

    checks = kit.lesson(0).checks
    same = Grade(0, [Outcome(check, "error", "ImportError in rover/agent.py line 3: no") for check in checks])
    assert root_cause(same) == "ImportError in rover/agent.py line 3: no"
    mixed = Grade(0, [Outcome(check, "error" if n else "failed", "ImportError in rover/agent.py line 3: no") for n, check in enumerate(checks)])
    assert root_cause(mixed) is None, "a failure of its own is not an import error"
    syntax = "SyntaxError in rover/agent.py line 9: invalid syntax"
    some_pass = Grade(0, [Outcome(check, "passed" if n < 2 else "error", syntax) for n, check in enumerate(checks)])
    assert root_cause(some_pass) == syntax, "an import failure behind every failure is the cause even when some checks pass"
    crash = Grade(0, [Outcome(check, "passed" if n < 2 else "error", "TypeError in rover/agent.py line 9: x") for n, check in enumerate(checks)])
    assert root_cause(crash) is None, "a crash while running is the checks' own business"
    told = Grade(0, [Outcome(check, "error", f"crash {n}") for n, check in enumerate(checks)], root_cause='SyntaxError: "rover/tools/ls.py", line 7')
    assert root_cause(told).startswith("SyntaxError") and location(root_cause(told)) == ("rover/tools/ls.py", 7)
    assert "Next: fix rover/tools/ls.py line 7" in next_step(told)


def test_no_next_lesson_at_the_last_one():
    from grader.commands.screen import next_step
    from grader.grading.grade import Grade
    from grader.grading.runner import Outcome

    last = len(kit.lessons()) - 1
    done = Grade(last, [Outcome(check, "passed") for number in range(last + 1) for check in kit.lesson(number).checks])
    assert "last lesson" in next_step(done) and "workshop next" not in next_step(done)
    before = Grade(last - 1, [Outcome(check, "passed") for number in range(last) for check in kit.lesson(number).checks])
    assert "Ready for `workshop next`" in next_step(before)


def test_report_paths_are_checked_before_grading(workspace, monkeypatch, tmp_path):
    import grader.commands.check

    monkeypatch.chdir(workspace(1))
    monkeypatch.setattr(grader.commands.check, "grade", lambda *args: pytest.fail("graded before refusing"))
    for option in ("--junit", "--gradescope"):
        result = run("check", option, str(tmp_path / "no-such-folder" / "report"))
        assert result.exit_code == 2 and result.output.count("\n") == 1, result.output
        assert f"workshop: {option}" in result.output and "no-such-folder does not exist" in result.output


@pytest.mark.parametrize("args", [["check", "--bogus"], ["chek"], ["start"], ["hint", "--level", "0"], ["dev", "check", "--lesson", "x"]])
def test_usage_errors_are_one_line(args):
    result = run(*args)
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and "Usage:" not in result.output, result.output
    assert result.output.startswith("workshop") and "--help` lists what it takes" in result.output


def test_check_outside_a_workspace_is_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run("check")
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and "workshop start lesson-0" in result.output


def test_check_never_imports_copier_or_anthropic(workspace):
    root = workspace(1)
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "grader.cli", "check", "--json"], cwd=root,
                          capture_output=True, text=True, timeout=120)
    imported = {line.split("|")[-1].strip().split(".")[0] for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "click" in imported and "grader" in imported, "the probe should see the check's own imports"
    assert not imported & {"copier", "anthropic", "jinja2", "yaml"}, imported & {"copier", "anthropic", "jinja2", "yaml"}


@pytest.mark.slow
def test_the_visible_workspace_tests_pass_when_solved_and_fail_on_the_stub(rendered, tmp_path):
    import shutil

    def pytest_in(root):
        return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider"], cwd=root, capture_output=True,
                              text=True, timeout=300, env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})

    last = len(kit.lessons()) - 1
    solved = pytest_in(shutil.copytree(rendered(last, True), tmp_path / "solved"))
    assert solved.returncode == 0, solved.stdout[-800:]
    stub = pytest_in(shutil.copytree(rendered(last), tmp_path / "stub"))
    assert stub.returncode == 1 and f"test_{kit.lesson(last).tool}.py" in stub.stdout


def test_the_workspace_readme_names_every_student_command(rendered):
    commands = ["workshop lesson", "workshop check", "workshop watch", "workshop hint", "workshop status", "workshop solution",
                "workshop reset stash", "workshop demo", "python -m rover"]
    first = (rendered(1) / "README.md").read_text()
    assert all(f"`{command}" in first for command in commands), [command for command in commands if f"`{command}" not in first]
    assert "`workshop next`" in first and "the red ones are this lesson" in " ".join(first.split())
    last = (rendered(len(kit.lessons()) - 1) / "README.md").read_text().split("\n---\n")[0]  # the commands, not the lesson text
    assert "`workshop next`" not in last, "no next at the last lesson"
