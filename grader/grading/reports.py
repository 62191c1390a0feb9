"""Grades in the formats other tools read: JUnit XML (CI dashboards) and Gradescope's results.json.

Each follows its consumer's documented reading: JUnit as dorny/test-reporter, GitLab and Jenkins parse it
(a `time` on every suite and case, the reason in the element text, XML 1.0 characters only); results.json as
Gradescope's autograder spec describes it (only documented top-level keys; points for the graded lesson's
own checks, earlier lessons as 0-point regression tests).
"""
from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from itertools import groupby
from pathlib import Path

from grader.grading.grade import Grade
from grader.grading.runner import SIDE_BROKEN, Outcome

MESSAGE_LIMIT = 2000  # characters of one failure message kept in a report
LABELS = {"passed": "Passed", "failed": "Failed", "error": "Error", "timeout": "Timed out"}
# Everything XML 1.0 cannot carry: C0 controls but tab/newline/return, lone surrogates, U+FFFE/U+FFFF.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff\ufffe\uffff]")


def xml_safe(text: str) -> str:
    """`text` with every character XML cannot hold shown as an escape (`\\x1b`), so nothing is lost silently."""
    return _NOT_XML.sub(lambda match: f"\\x{ord(match.group()):02x}" if ord(match.group()) < 0x100
                        else f"\\u{ord(match.group()):04x}", text)


def reason(outcome: Outcome) -> str:
    """What went wrong, labelled with how it went wrong (a timeout is not a wrong answer), cut to a readable size."""
    message = outcome.message if len(outcome.message) <= MESSAGE_LIMIT else outcome.message[:MESSAGE_LIMIT] + " [cut]"
    label = LABELS.get(outcome.status, outcome.status.capitalize())
    return f"{label}: {message}" if message else label


def write_junit(grade: Grade, path: Path, started: datetime | None = None) -> None:
    """One <testsuite> per lesson inside <testsuites>; a failed check is a <failure>, a timeout or crash an <error>."""
    stamp = (started or datetime.now(timezone.utc)).astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    root = ET.Element("testsuites", name=f"workshop lesson-{grade.lesson}", **_counts(grade.outcomes))
    note = _sandbox_note(grade)
    for lesson, group in groupby(grade.outcomes, key=lambda outcome: outcome.check.lesson):
        outcomes = list(group)
        suite = ET.SubElement(root, "testsuite", name=f"lesson-{lesson}", timestamp=stamp, hostname="localhost",
                              skipped="0", **_counts(outcomes))
        if grade.sandbox:
            ET.SubElement(ET.SubElement(suite, "properties"), "property", name="sandbox", value=grade.sandbox)
        if note:
            ET.SubElement(suite, "system-out").text = xml_safe(note)
        for outcome in outcomes:
            case = ET.SubElement(suite, "testcase", classname=f"lesson-{lesson}", name=xml_safe(outcome.check.id),
                                 time=_seconds(outcome.seconds))
            if not outcome.passed:
                text = reason(outcome)
                if outcome.first_hint:
                    text += f"\n\nHint: {outcome.first_hint}\n(more with `workshop hint {outcome.check.id}`)"
                element = ET.SubElement(case, "failure" if outcome.status == "failed" else "error",
                                        message=xml_safe(reason(outcome).splitlines()[0]),
                                        type=outcome.status)
                element.text = xml_safe(text)
    ET.indent(root)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


def _sandbox_note(grade: Grade) -> str:
    """'Graded without a sandbox ...' when the process fallback graded it (every report says so); else ''."""
    from grader.boundary.side import in_process_note

    note = in_process_note(grade.sandbox)
    return f"Graded without a sandbox: {note}" if note else ""


def _counts(outcomes: list[Outcome]) -> dict[str, str]:
    return {
        "tests": str(len(outcomes)),
        "failures": str(sum(outcome.status == "failed" for outcome in outcomes)),
        "errors": str(sum(outcome.status in ("error", "timeout") for outcome in outcomes)),
        "time": _seconds(sum(outcome.seconds for outcome in outcomes)),
    }


def _seconds(value: float) -> str:
    return f"{value:.3f}"


def gradescope_results(grade: Grade, execution_time: float) -> dict:
    """results.json as Gradescope documents it: the graded lesson's checks carry the points; `execution_time` is the
    run's wall time (checks run side by side, so their own times do not add up to it); tests numbered `N.k`, k
    counting from 1 within lesson N."""
    own = [outcome for outcome in grade.outcomes if outcome.check.lesson == grade.lesson]
    earlier = [outcome for outcome in grade.outcomes if outcome.check.lesson != grade.lesson]
    score = sum(outcome.check.points for outcome in own if outcome.passed)
    summary = (f"Lesson {grade.lesson}: {sum(o.passed for o in own)} of {len(own)} checks pass, "
               f"{score} of {sum(o.check.points for o in own)} points.")
    if earlier:
        summary += (f" Earlier lessons (0 points, they show regressions): "
                    f"{sum(o.passed for o in earlier)} of {len(earlier)} checks still pass.")
    if grade.root_cause:
        summary += f"\n{grade.root_cause}" if grade.root_cause.startswith(SIDE_BROKEN) else f"\nThe code could not be imported: {grade.root_cause}"
    if _sandbox_note(grade):
        summary += f"\n{_sandbox_note(grade)}"
    tests = []
    for lesson, group in groupby(grade.outcomes, key=lambda outcome: outcome.check.lesson):
        tests += [_gradescope_test(outcome, f"{lesson}.{k}", lesson == grade.lesson) for k, outcome in enumerate(group, start=1)]
    return {
        "score": score,
        "execution_time": round(max(0.0, execution_time), 3),
        "output": summary,
        "output_format": "text",
        "visibility": "visible",
        "tests": tests,
    }


def _gradescope_test(outcome: Outcome, number: str, counts: bool) -> dict:
    check = outcome.check
    points = check.points if counts else 0
    output = "" if outcome.passed else reason(outcome) + (f"\nHint: {outcome.first_hint}" if outcome.first_hint else "")
    return {
        "name": f"lesson-{check.lesson} {check.id}: {check.title}" + ("" if counts else " (regression, 0 points)"),
        "number": number,
        "score": points if outcome.passed else 0,
        "max_score": points,
        "status": "passed" if outcome.passed else "failed",
        "visibility": "visible",
        "output": output,
        "output_format": "text",
        "tags": [f"lesson-{check.lesson}", outcome.status],
    }


def write_gradescope(grade: Grade, path: Path, started: datetime | None = None) -> None:
    """results.json; its execution_time runs from `started`, or from this process's start (`workshop check --gradescope`)."""
    path.write_text(json.dumps(gradescope_results(grade, _since(started)), indent=2), encoding="utf-8")


def _since(started: datetime | None) -> float:
    if started is not None:
        return (datetime.now(timezone.utc) - started.astimezone(timezone.utc)).total_seconds()
    import time

    import grader

    return time.monotonic() - grader.STARTED  # not psutil's create_time: its boot time is in whole seconds, up to 1 s off


def classroom_results(grade: Grade) -> dict:
    """The result GitHub Classroom's autograding-grading-reporter reads (base64 of this, in a `<RUNNER>_RESULTS`
    variable): the same points as on Gradescope, the graded lesson's checks only."""
    own = [outcome for outcome in grade.outcomes if outcome.check.lesson == grade.lesson]
    tests = [{"name": f"lesson-{outcome.check.lesson} {outcome.check.id}",
              "status": "pass" if outcome.passed else "fail" if outcome.status == "failed" else "error",
              "score": outcome.check.points if outcome.passed and outcome.check.lesson == grade.lesson else 0,
              "message": "" if outcome.passed else reason(outcome),
              "execution_time": f"{outcome.seconds:.2f}s"}
             for outcome in grade.outcomes]
    return {"version": 1, "status": "pass" if grade.passed else "fail",
            "max_score": sum(outcome.check.points for outcome in own), "tests": tests}


def write_classroom(grade: Grade, path: Path) -> None:
    path.write_text(json.dumps(classroom_results(grade), indent=2), encoding="utf-8")
