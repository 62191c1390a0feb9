"""A graded class as files: CSV (one row per student, one column per check), JSON, and a static HTML report.

A score counts the graded lesson's own checks (as on Gradescope); failing checks of earlier lessons, which every
student was handed solved, are counted beside it as regressions. Everything a student controls (a name from a git
author, a folder name, a message) is made safe for where it goes: CSV cells that a spreadsheet would run as a
formula are defused and terminal text loses its control characters (both by grader.classroom.safe_text, as on the
board), HTML is escaped. The HTML page needs no JavaScript:
its check matrix folds by lesson (one column per lesson, its failing checks behind a <details>), with the student
column pinned, so a class fits a 1366x768 projector.
"""
from __future__ import annotations

import csv
import json
from collections import Counter
from datetime import datetime
from html import escape
from pathlib import Path

from grader.classroom.bulk import UNSAFE, ClassRun, Student
from grader.classroom.safe_text import clean, clean_message, clean_tree, csv_row
from grader.course import kit

TOP_FAILING = 8  # failing checks shown before "more" (what to explain next fits one screen)
MARKS = {"passed": "✓", "failed": "✗", "error": "!", "timeout": "⧗"}
def check_columns(run: ClassRun) -> list[kit.Check]:
    """Every check of lessons 0..the furthest lesson graded, in course order."""
    furthest = max((student.lesson for student in run.students if student.graded), default=-1)
    return [check for number in range(furthest + 1) for check in kit.lesson(number).checks]


NOT_IMPORTING = "not run: the rover package does not import ("


def cause(student: Student) -> str:
    """Why none of a graded student's failing checks could run (rover does not import, say), as one line; "" when
    they ran. One cause is one problem of the student's, not a failure of every check."""
    failing = [outcome for outcome in student.outcomes or [] if not outcome.passed]
    messages = {outcome.message for outcome in failing}
    if len(failing) < 2 or len(messages) != 1 or any(outcome.status != "error" for outcome in failing):
        return ""
    message = messages.pop()
    if message.startswith(NOT_IMPORTING):
        return "rover does not import: " + message[len(NOT_IMPORTING):].removesuffix(")")
    return message.removeprefix("not run: ") if message.startswith("not run: ") else ""


def problem(student: Student) -> str:
    """The row's problem, graded or not: why there is no grade, or why no check could run; "" for neither."""
    return student.problem if not student.graded else cause(student)


def summary(student: Student) -> str:
    if not student.graded:
        return student.problem
    if cause(student):
        return f"no check could run: {cause(student)}"
    own = student.own
    text = f"{sum(outcome.passed for outcome in own)}/{len(own)} of lesson {student.lesson}'s checks pass"
    return text + (f"; {len(student.regressions)} regressions in earlier lessons" if student.regressions else "")


def write_csv(run: ClassRun, path: Path) -> None:
    columns = check_columns(run)
    with path.open("w", newline="", encoding="utf-8") as out:
        table = csv.writer(out)
        table.writerow(csv_row(["student", "source", "author", "lesson", "score", "max_score", "regressions", "result", "problem",
                                "sandbox", *(check.id for check in columns)]))
        for student in run.students:
            statuses = {outcome.check.id: outcome.status for outcome in student.outcomes or []}
            graded = student.graded
            row = [student.name, student.source, student.author or "", "" if student.lesson is None else student.lesson,
                   student.score if graded else "", student.max_score if graded else "",
                   len(student.regressions) if graded and not cause(student) else "", summary(student), problem(student),
                   run.sandbox,
                   *(statuses.get(check.id, "") for check in columns)]
            table.writerow(csv_row(row))


def as_json(run: ClassRun) -> dict:
    return {
        "sandbox": run.sandbox,
        "unsafe": run.sandbox == UNSAFE,
        "seconds": round(run.seconds, 3),
        "students": [
            {"name": student.name, "source": student.source, "lesson": student.lesson, "problem": problem(student) or None,
             "author": student.author or None,
             "seconds": round(student.seconds, 3), "cpu_seconds": round(student.cpu_seconds, 3),
             "grade": _grade(student) if student.graded else None}
            for student in run.students
        ],
        "failing_most": [{"id": check.id, "title": check.title, "failing": count} for check, count in failures(run)],
        "not_importing": sum(bool(cause(student)) for student in run.students if student.graded),
    }


def _grade(student: Student) -> dict:
    return {"lesson": student.lesson, "passed": student.passed, "score": student.score, "max_score": student.max_score,
            "regressions": [outcome.check.id for outcome in student.regressions],
            "checks": [{"id": outcome.check.id, "lesson": outcome.check.lesson, "status": outcome.status,
                        "message": outcome.message, "points": outcome.check.points if outcome.check.lesson == student.lesson else 0}
                       for outcome in student.outcomes]}


def write_json(run: ClassRun, path: Path) -> None:
    path.write_text(json.dumps(clean_tree(as_json(run)), indent=2), encoding="utf-8")


def failures(run: ClassRun) -> list[tuple[kit.Check, int]]:
    """Checks by how many students they fail for (errors and timeouts too), most first. A student whose checks could
    not run (see `cause`) is counted once, apart, not as a failure of every check."""
    counts = Counter(outcome.check for student in run.students if student.graded and not cause(student)
                     for outcome in student.outcomes if not outcome.passed)
    return sorted(counts.items(), key=lambda item: (-item[1], item[0].lesson, item[0].id))


def write_html(run: ClassRun, path: Path) -> None:
    path.write_text(render_html(run), encoding="utf-8")


def render_html(run: ClassRun) -> str:
    """The grades first (what the report is for), then what to explain next, then how far the class has got."""
    graded = [student for student in run.students if student.graded]
    banner = (f"<p class=unsafe>Graded without a sandbox (--unsafe-no-sandbox): student code ran with the instructor's "
              f"rights, so a student could have changed any grade here.</p>" if run.sandbox == UNSAFE else "")
    lessons = sorted({student.lesson for student in graded})
    title = f"lesson {lessons[0]}" if len(lessons) == 1 else "lessons " + ", ".join(map(str, lessons)) if lessons else ""
    broken = sum(bool(cause(student)) for student in graded)
    counts = [f"{len(run.students)} entries", f"{sum(student.passed for student in graded)} pass every check"]
    counts += [f"{broken} whose checks could not run"] if broken else []
    counts += [f"{len(run.students) - len(graded)} not graded"] if len(graded) < len(run.students) else []
    where = "" if run.sandbox == UNSAFE else f"each graded in their own {escape(run.sandbox)} sandbox, "
    parts = [
        f"<h1>Class report{': ' + title if title else ''}</h1>{banner}<p class=sub>{' · '.join(counts)}; {where}"
        f"{datetime.now():%Y-%m-%d %H:%M}.</p>",
        _students(run), _failing_most(run, len(graded), broken), _progress(graded),
    ]
    return f"<!doctype html>\n<html lang=en><head><meta charset=utf-8><meta name=viewport content='width=device-width'>" \
           f"<title>Class report</title><style>{STYLE}</style></head><body>{''.join(parts)}</body></html>\n"


def _progress(graded: list[Student]) -> str:
    """A bar for each lesson someone is on; the lessons nobody is on, in one line."""
    rows, empty = [], []
    for lesson in kit.lessons():
        here = [student for student in graded if student.lesson == lesson.number]
        if not here:
            empty.append(str(lesson.number))
            continue
        done = sum(student.passed for student in here)
        width = 100 / max(1, len(graded))
        rows.append(f"<tr><th>{lesson.id}</th><td>{escape(lesson.title)}</td><td class=chart>"
                    f"<span class='bar done' style='width:{done * width:.1f}%'></span>"
                    f"<span class='bar open' style='width:{(len(here) - done) * width:.1f}%'></span></td>"
                    f"<td>{len(here)} on it, {done} passing all</td></tr>")
    nobody = f"<p class=legend>No one is on lesson{'s' if len(empty) > 1 else ''} {', '.join(empty)}.</p>" if empty else ""
    return ("<h2>Progress per lesson</h2><p class=legend><span class='bar done'></span> every check passes "
            "<span class='bar open'></span> not yet</p><table class=progress>" + "".join(rows) + "</table>" + nobody)


def _failing_most(run: ClassRun, graded: int, broken: int) -> str:
    counted = failures(run)
    rows = [f"<tr><th>{escape(check.id)}</th><td class=title>{escape(check.title)}</td><td class=chart><span class='bar fail' "
            f"style='width:{100 * count / max(1, graded):.1f}%'></span></td><td>{count} of {graded}</td></tr>"
            for check, count in counted]
    if broken:  # one cause, counted once: the row says which students, the table why
        rows.insert(0, f"<tr><th>no check ran</th><td class=title>the student's rover does not import (or stopped the "
                       f"run): see the student's row</td><td class=chart><span class='bar fail' style='width:"
                       f"{100 * broken / max(1, graded):.1f}%'></span></td><td>{broken} of {graded}</td></tr>")
    if not rows:
        return "<h2>Failing checks</h2><p>No check fails for anyone.</p>"
    top, rest = "".join(rows[:TOP_FAILING]), "".join(rows[TOP_FAILING:])
    more = (f"<details><summary>{len(rows) - TOP_FAILING} more failing checks</summary><table class=progress>{rest}</table>"
            f"</details>" if rest else "")
    return f"<h2>Failing checks across the class</h2><table class=progress>{top}</table>{more}"


def _students(run: ClassRun) -> str:
    lessons = sorted({check.lesson for check in check_columns(run)})
    head = "".join(f"<th class=lesson title='lesson {number}'>L{number}</th>" for number in lessons)
    rows = []
    for student in run.students:
        name = f"<th class=name title='{escape(clean(student.source), quote=True)}'>{escape(clean(student.name))}</th>"
        cells = [name, f"<td>{'' if student.lesson is None else student.lesson}</td>"]
        if not student.graded:
            cells.append(f"<td class=problem colspan={len(lessons) + 2}>not graded: {escape(clean_message(student.problem))}</td>")
        elif cause(student):
            cells.append(f"<td class=score>{student.score}/{student.max_score}</td><td>–</td>"
                         f"<td class=cause colspan={len(lessons)}>✗ no check could run: {escape(clean_message(cause(student)))}</td>")
        else:
            cells.append(f"<td class=score>{student.score}/{student.max_score}</td>"
                         f"<td class={'failed' if student.regressions else 'passed'}>{len(student.regressions)}</td>")
            cells += [_lesson_cell(student, number) for number in lessons]
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return ("<h2>Students</h2><div class=matrix><table class=students>"
            f"<tr><th class=name>student</th><th>lesson</th><th>score</th><th>regressions</th>{head}</tr>"
            + "".join(rows) + "</table></div><p class=legend>score: the graded lesson's own checks; regressions: earlier "
            "lessons' checks that fail. Open a lesson's cell to see which checks fail.</p>")


def _lesson_cell(student: Student, number: int) -> str:
    outcomes = [outcome for outcome in student.outcomes if outcome.check.lesson == number]
    if not outcomes:
        return "<td></td>"
    failing = [outcome for outcome in outcomes if not outcome.passed]
    count = f"{len(outcomes) - len(failing)}/{len(outcomes)}"
    if not failing:
        return f"<td class=passed>✓ {count}</td>"
    items = "".join(f"<li class={outcome.status} title='{escape(clean(outcome.message, 300), quote=True)}'>"
                    f"{MARKS.get(outcome.status, '?')} {escape(outcome.check.id)}</li>" for outcome in failing)
    return f"<td class=failed><details><summary>✗ {count}</summary><ul>{items}</ul></details></td>"


STYLE = """
body{font-family:system-ui,sans-serif;margin:1em 1.5em;color:#222;max-width:100%}
h1{margin:.2em 0;font-size:1.6em}h2{margin:.8em 0 .3em;font-size:1.2em}
table{border-collapse:collapse;margin-bottom:1.5em}th,td{padding:.2em .5em;text-align:left;border-bottom:1px solid #eee;vertical-align:top}
.progress td,.progress th{white-space:nowrap}.progress td.title{white-space:normal}
.chart{width:24em;max-width:30vw}.bar{display:inline-block;height:1em;vertical-align:middle}.legend .bar{width:1em}
.done{background:#2a9d4b}.open{background:#e9b949}.fail{background:#d1495b}
.matrix{overflow-x:auto;max-width:100%}
.students{font-size:1.05em}.students td,.students th{white-space:nowrap;padding:.25em .5em}.score{font-weight:bold}
.students td.cause{color:#d1495b;white-space:normal;max-width:60em}.sub{color:#555;margin:.2em 0 .6em}
.students .name{position:sticky;left:0;background:#fff;z-index:1;max-width:16em;overflow:hidden;text-overflow:ellipsis;box-shadow:1px 0 0 #ddd}
.students td.passed{color:#2a9d4b}.students td.failed,.students li.failed,.students li.error{color:#d1495b}
.students li.timeout{color:#b07d00}.students ul{margin:.2em 0;padding-left:1em;font-size:.85em;list-style:none}
.students summary{cursor:pointer}.problem{color:#888;font-style:italic;white-space:normal!important}
.unsafe{background:#d1495b;color:#fff;padding:.5em;font-weight:bold}.sandbox{color:#555}
"""
