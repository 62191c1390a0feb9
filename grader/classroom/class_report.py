"""A graded class as files: CSV (one row per student, one column per check), JSON, and a static HTML report.

The HTML page needs no JavaScript and no build: CSS bars show how far the class has got, lesson by lesson,
and which checks fail most across it (what to explain next).
"""
from __future__ import annotations

import csv
import json
from collections import Counter
from datetime import datetime
from html import escape
from pathlib import Path

from grader.classroom.bulk import ClassRun, Student
from grader.course import kit

MARKS = {"passed": "✓", "failed": "✗", "error": "!", "timeout": "⧗"}


def check_columns(run: ClassRun) -> list[kit.Check]:
    """Every check of lessons 0..the furthest lesson graded, in course order."""
    furthest = max((student.lesson for student in run.students if student.graded), default=-1)
    return [check for number in range(furthest + 1) for check in kit.lesson(number).checks]


def summary(student: Student) -> str:
    if not student.graded:
        return student.problem
    passed = sum(outcome.passed for outcome in student.grade.outcomes)
    return f"{passed}/{len(student.grade.outcomes)} checks pass"


def write_csv(run: ClassRun, path: Path) -> None:
    columns = check_columns(run)
    with path.open("w", newline="", encoding="utf-8") as out:
        table = csv.writer(out)
        table.writerow(["student", "source", "lesson", "score", "max_score", "result", *(check.id for check in columns)])
        for student in run.students:
            statuses = {outcome.check.id: outcome.status for outcome in student.grade.outcomes} if student.graded else {}
            table.writerow([student.name, student.source, "" if student.lesson is None else student.lesson,
                            student.grade.score if student.graded else "", student.grade.max_score if student.graded else "",
                            summary(student), *(statuses.get(check.id, "") for check in columns)])


def as_json(run: ClassRun) -> dict:
    return {
        "students": [
            {"name": student.name, "source": student.source, "lesson": student.lesson, "problem": student.problem or None,
             "seconds": round(student.seconds, 3), "cpu_seconds": round(student.cpu_seconds, 3),
             "grade": student.grade.as_json() if student.graded else None}
            for student in run.students
        ],
        "failing_most": [{"id": check.id, "title": check.title, "failing": count} for check, count in failures(run)],
    }


def write_json(run: ClassRun, path: Path) -> None:
    path.write_text(json.dumps(as_json(run), indent=2), encoding="utf-8")


def failures(run: ClassRun) -> list[tuple[kit.Check, int]]:
    """Checks by how many students they fail for (errors and timeouts too), most first."""
    counts = Counter(outcome.check for student in run.students if student.graded
                     for outcome in student.grade.outcomes if not outcome.passed)
    return sorted(counts.items(), key=lambda item: (-item[1], item[0].lesson, item[0].id))


def write_html(run: ClassRun, path: Path) -> None:
    path.write_text(render_html(run), encoding="utf-8")


def render_html(run: ClassRun) -> str:
    graded = [student for student in run.students if student.graded]
    parts = [
        f"<h1>Class report</h1><p>{len(run.students)} entries: {len(graded)} graded, "
        f"{len(run.students) - len(graded)} not graded. Made {datetime.now():%Y-%m-%d %H:%M}.</p>",
        _progress(graded), _failing_most(run, len(graded)), _students(run),
    ]
    return f"<!doctype html>\n<html lang=en><head><meta charset=utf-8><title>Class report</title><style>{STYLE}</style></head>" \
           f"<body>{''.join(parts)}</body></html>\n"


def _progress(graded: list[Student]) -> str:
    rows = []
    for lesson in kit.lessons():
        here = [student for student in graded if student.lesson == lesson.number]
        done = sum(student.grade.passed for student in here)
        width = 100 / max(1, len(graded))
        rows.append(f"<tr><th>{lesson.id}</th><td>{escape(lesson.title)}</td><td class=chart>"
                    f"<span class='bar done' style='width:{done * width:.1f}%'></span>"
                    f"<span class='bar open' style='width:{(len(here) - done) * width:.1f}%'></span></td>"
                    f"<td>{len(here)} on it, {done} passing all</td></tr>")
    return ("<h2>Progress per lesson</h2><p class=legend><span class='bar done'></span> every check passes "
            "<span class='bar open'></span> not yet</p><table class=progress>" + "".join(rows) + "</table>")


def _failing_most(run: ClassRun, graded: int) -> str:
    counted = failures(run)
    if not counted:
        return "<h2>Failing checks</h2><p>No check fails for anyone.</p>"
    rows = "".join(
        f"<tr><th>{escape(check.id)}</th><td>{escape(check.title)}</td><td class=chart><span class='bar fail' "
        f"style='width:{100 * count / max(1, graded):.1f}%'></span></td><td>{count} of {graded}</td></tr>"
        for check, count in counted)
    return f"<h2>Failing checks across the class</h2><table class=progress>{rows}</table>"


def _students(run: ClassRun) -> str:
    columns = check_columns(run)
    head = "".join(f"<th class=check title='{escape(check.title, quote=True)}'>{escape(check.id)}</th>" for check in columns)
    rows = []
    for student in run.students:
        cells = [f"<th>{escape(student.name)}</th>", f"<td>{escape(student.source)}</td>",
                 f"<td>{'' if student.lesson is None else student.lesson}</td>"]
        if not student.graded:
            cells.append(f"<td class=problem colspan={len(columns) + 1}>{escape(student.problem)}</td>")
        else:
            outcomes = {outcome.check.id: outcome for outcome in student.grade.outcomes}
            cells.append(f"<td>{student.grade.score}/{student.grade.max_score}</td>")
            for check in columns:
                outcome = outcomes.get(check.id)
                cells.append("<td></td>" if outcome is None else
                             f"<td class={outcome.status} title='{escape(outcome.message[:300], quote=True)}'>{MARKS.get(outcome.status, '?')}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return (f"<h2>Students</h2><table class=students><tr><th>student</th><th>source</th><th>lesson</th><th>score</th>{head}</tr>"
            + "".join(rows) + "</table>")


STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin-bottom:2em}th,td{padding:.2em .5em;text-align:left;border-bottom:1px solid #eee;white-space:nowrap}
.chart{width:40em}.bar{display:inline-block;height:1em;vertical-align:middle}.legend .bar{width:1em}
.done{background:#2a9d4b}.open{background:#e9b949}.fail{background:#d1495b}
.students td.passed{color:#2a9d4b}.students td.failed,.students td.error{color:#d1495b}.students td.timeout{color:#b07d00}
.students th.check{writing-mode:vertical-rl;font-weight:normal;font-size:.8em}.problem{color:#888;font-style:italic}
"""
