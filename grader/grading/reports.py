"""Grades in the formats other tools read: JUnit XML (CI dashboards) and Gradescope's results.json."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from grader.grading.grade import Grade


def write_junit(grade: Grade, path: Path) -> None:
    failures = sum(outcome.status == "failed" for outcome in grade.outcomes)
    errors = len(grade.outcomes) - failures - sum(outcome.passed for outcome in grade.outcomes)
    suite = ET.Element("testsuite", name=f"workshop lesson-{grade.lesson}", tests=str(len(grade.outcomes)),
                       failures=str(failures), errors=str(errors))
    for outcome in grade.outcomes:
        case = ET.SubElement(suite, "testcase", classname=f"lesson-{outcome.check.lesson}", name=outcome.check.id)
        if not outcome.passed:
            tag = "failure" if outcome.status == "failed" else "error"
            ET.SubElement(case, tag, message=outcome.message, type=outcome.status).text = "\n".join(outcome.check.hints)
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)


def write_gradescope(grade: Grade, path: Path) -> None:
    tests = [
        {
            "name": f"lesson-{outcome.check.lesson} {outcome.check.id}: {outcome.check.title}",
            "score": outcome.check.points if outcome.passed else 0,
            "max_score": outcome.check.points,
            "status": "passed" if outcome.passed else "failed",
            "output": "" if outcome.passed else f"{outcome.message}\nHint: {outcome.check.hints[0]}",
        }
        for outcome in grade.outcomes
    ]
    report = {"score": grade.score, "max_score": grade.max_score, "tests": tests}
    path.write_text(json.dumps(report, indent=2), encoding="utf-8")
