"""The report files read as their consumers read them: JUnit through junitparser, results.json against Gradescope's spec."""
from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone

import jsonschema
import pytest
from junitparser import Error, Failure, JUnitXml

from grader.course import kit
from grader.course.workspace import Workspace
from grader.grading.grade import Grade, grade
from grader.grading.reports import gradescope_results, write_gradescope, write_junit, xml_safe
from grader.grading.runner import Outcome

FORMATS = ["text", "html", "simple_format", "md", "ansi"]
VISIBILITY = ["hidden", "after_due_date", "after_published", "visible"]
# Written from Gradescope's "Autograder Specifications" (Output format, visibility, test case status, output
# string formatting). Only the documented keys: a test has no execution_time of its own.
RESULTS_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "anyOf": [{"required": ["score"]}, {"required": ["tests"]}],
    "properties": {
        "score": {"type": "number"},
        "execution_time": {"type": "number", "minimum": 0},
        "output": {"type": "string"},
        "output_format": {"enum": FORMATS},
        "test_output_format": {"enum": FORMATS},
        "test_name_format": {"enum": FORMATS},
        "visibility": {"enum": VISIBILITY},
        "stdout_visibility": {"enum": VISIBILITY},
        "extra_data": {"type": "object"},
        "leaderboard": {"type": "array"},
        "tests": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "score": {"type": "number"},
                    "max_score": {"type": "number"},
                    "status": {"enum": ["passed", "failed"]},
                    "name": {"type": "string"},
                    "name_format": {"enum": FORMATS},
                    "number": {"type": "string"},
                    "output": {"type": "string"},
                    "output_format": {"enum": FORMATS},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "visibility": {"enum": VISIBILITY},
                    "extra_data": {"type": "object"},
                },
            },
        },
    },
}
HOSTILE = "boom \x1b[31mred\x1b[0m \x00nul \x07bell \ud800 \uffff end"


def _check(lesson: int, index: int) -> kit.Check:
    return kit.lesson(lesson).checks[index]


@pytest.fixture
def mixed() -> Grade:
    """Lesson 1 graded: lesson 0 passes but one regression; lesson 1 has one of each outcome."""
    outcomes = [Outcome(check, "passed", seconds=0.25) for check in kit.lesson(0).checks]
    outcomes[-1] = Outcome(outcomes[-1].check, "failed", "the loop stopped early", 0.5)
    ones = kit.lesson(1).checks
    outcomes += [Outcome(ones[0], "passed", seconds=0.1), Outcome(ones[1], "failed", HOSTILE, 0.2),
                 Outcome(ones[2], "timeout", "still running after 10 s", 10.0),
                 Outcome(ones[3], "error", "ZeroDivisionError in rover/tools/read.py line 3: division by zero", 0.3)]
    outcomes += [Outcome(check, "passed", seconds=0.1) for check in ones[4:]]
    return Grade(1, outcomes)


def test_junit_parses_with_times_and_tells_failure_from_error(mixed, tmp_path):
    path = tmp_path / "junit.xml"
    write_junit(mixed, path, started=datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc))
    xml = JUnitXml.fromfile(str(path))
    suites = {suite.name: suite for suite in xml}
    assert set(suites) == {"lesson-0", "lesson-1"}
    lesson1 = suites["lesson-1"]
    assert lesson1.timestamp == "2026-01-02T03:04:05"
    assert lesson1.time == pytest.approx(0.1 * (len(kit.lesson(1).checks) - 3) + 0.2 + 10.0 + 0.3, abs=0.01)
    assert (lesson1.tests, lesson1.failures, lesson1.errors) == (len(kit.lesson(1).checks), 1, 2)
    assert suites["lesson-0"].failures == 1
    cases = {case.name: case for case in lesson1}
    ones = kit.lesson(1).checks
    assert cases[ones[0].id].is_passed and cases[ones[0].id].time == pytest.approx(0.1)
    [failure] = cases[ones[1].id].result
    assert isinstance(failure, Failure)
    [timeout] = cases[ones[2].id].result
    [crash] = cases[ones[3].id].result
    assert isinstance(timeout, Error) and timeout.type == "timeout" and timeout.message.startswith("Timed out:")
    assert isinstance(crash, Error) and crash.type == "error" and "ZeroDivisionError" in crash.text


def test_junit_text_holds_the_reason_and_only_the_first_hint(mixed, tmp_path):
    path = tmp_path / "junit.xml"
    write_junit(mixed, path)
    [case] = [case for suite in JUnitXml.fromfile(str(path)) for case in suite if case.name == kit.lesson(1).checks[1].id]
    [failure] = case.result
    hints = kit.lesson(1).checks[1].hints
    assert failure.text.startswith("Failed: boom") and hints[0] in failure.text
    assert not any(hint in failure.text for hint in hints[1:]), "later hint levels (the technique) stay out of CI logs"
    assert failure.message.startswith("Failed: boom")


def test_junit_escapes_every_character_xml_cannot_hold(mixed, tmp_path):
    path = tmp_path / "junit.xml"
    write_junit(mixed, path)
    raw = path.read_bytes()
    assert not any(byte < 0x20 and byte not in b"\t\n\r" for byte in raw)
    text = raw.decode("utf-8")  # no lone surrogate made it out either
    assert "\\x1b[31mred" in text and "\\x00nul" in text and "\\ud800" in text and "\\uffff" in text
    assert xml_safe("tab\tnew\nline é ✓") == "tab\tnew\nline é ✓"


def test_results_json_follows_the_documented_spec(mixed, tmp_path):
    path = tmp_path / "results.json"
    write_gradescope(mixed, path, started=datetime.now(timezone.utc) - timedelta(seconds=6.1))
    results = json.loads(path.read_text())
    jsonschema.validate(results, RESULTS_SCHEMA)
    assert "max_score" not in results
    tests = results["tests"]
    assert len(tests) == len(mixed.outcomes)
    own = [test for test in tests if test["name"].startswith("lesson-1 ")]
    earlier = [test for test in tests if test["name"].startswith("lesson-0 ")]
    assert all(test["max_score"] == 0 and test["score"] == 0 for test in earlier), "earlier lessons earn nothing"
    assert [test["status"] for test in earlier].count("failed") == 1, "but a regression still shows"
    assert results["score"] == sum(test["score"] for test in own) == len(own) - 3
    assert sum(test["max_score"] for test in own) == sum(check.points for check in kit.lesson(1).checks)
    assert results["execution_time"] == pytest.approx(6.1, abs=0.5), "the run's wall time, not the checks' times added up"
    assert sum(outcome.seconds for outcome in mixed.outcomes) > 10
    numbers = [test["number"] for test in tests]
    assert numbers[:2] == ["0.1", "0.2"] and numbers[len(earlier)] == "1.1", "k restarts in each lesson"
    assert numbers == [f"{lesson}.{k}" for lesson in (0, 1) for k in range(1, len(kit.lesson(lesson).checks) + 1)]


def test_check_gradescope_times_the_run_from_the_process_start(workspace, tmp_path):
    import subprocess
    import sys

    root = workspace(1, solved=True)
    path = tmp_path / "results.json"
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "grader.cli", "check", "--gradescope", str(path)], cwd=root, capture_output=True, timeout=300)
    wall = time.monotonic() - started
    results = json.loads(path.read_text())
    jsonschema.validate(results, RESULTS_SCHEMA)
    assert 0.2 * wall < results["execution_time"] <= wall + 0.5


def test_results_json_keeps_timeouts_and_errors_apart(mixed):
    tests = {test["name"].split(":")[0]: test for test in gradescope_results(mixed, 1.0)["tests"]}
    ones = kit.lesson(1).checks
    timeout, crash, wrong = (tests[f"lesson-1 {ones[n].id}"] for n in (2, 3, 1))
    assert timeout["status"] == crash["status"] == wrong["status"] == "failed"
    assert timeout["output"].startswith("Timed out: still running") and "timeout" in timeout["tags"]
    assert crash["output"].startswith("Error: ZeroDivisionError") and "error" in crash["tags"]
    assert wrong["output"].startswith("Failed: boom") and f"Hint: {ones[1].hints[0]}" in wrong["output"]
    assert ones[1].hints[1] not in wrong["output"]
    assert "execution_time" not in timeout and timeout["visibility"] == "visible"
    assert tests[f"lesson-1 {ones[0].id}"]["output"] == ""


def test_an_untouched_stub_earns_no_points_for_the_lessons_handed_out_solved(workspace):
    root = workspace(2)
    result = grade(Workspace(root, 2))
    results = gradescope_results(result, 1.0)
    jsonschema.validate(results, RESULTS_SCHEMA)
    earlier = [test for test in results["tests"] if not test["name"].startswith("lesson-2 ")]
    assert earlier and all(test["status"] == "passed" and test["max_score"] == 0 for test in earlier)
    assert results["score"] == 0, results["output"]
    assert all(outcome.seconds > 0 for outcome in result.outcomes), "every check's own time is measured"


def test_the_github_classroom_result_counts_the_same_points(mixed):
    from grader.grading.reports import classroom_results

    result = classroom_results(mixed)
    ones = kit.lesson(1).checks
    assert result["status"] == "fail" and result["max_score"] == sum(check.points for check in ones)
    assert sum(test["score"] for test in result["tests"]) == gradescope_results(mixed, 1.0)["score"]
    statuses = {test["name"].split(" ")[1]: test["status"] for test in result["tests"]}
    assert (statuses[ones[1].id], statuses[ones[2].id], statuses[ones[3].id]) == ("fail", "error", "error")
