"""What the board shows, rendered from the store: an HTML fragment the page swaps in, and a CSV export.

Every string a student could influence goes through html.escape here; the page's script only
swaps in this fragment, so there is one place where escaping happens.
"""
from __future__ import annotations

import csv
import io
import time
from collections import Counter
from functools import lru_cache
from html import escape

from grader.classroom.safe_text import csv_row
from grader.classroom.store import Student

FAILING_SHOWN = 5
STUCK_WARN = 5 * 60  # seconds without progress before a row is highlighted
CELL_CLASSES = {0: "name", 5: "checks"}


def fragment(students: list[Student], now: float | None = None, budget: int | None = None) -> str:
    now = time.time() if now is None else now
    waiting = [student for student in students if student.pending]
    seated = [student for student in students if not student.pending]
    reporting = [student for student in seated if student.lesson is not None]
    summary = f"{len(seated)} students joined, {len(reporting)} reporting" + (f", {len(waiting)} waiting for approval" if waiting else "")
    parts = [f'<p class="summary">{summary} · updated {time.strftime("%H:%M:%S", time.localtime(now))}</p>',
             '<div class="layout"><section class="main"><h2>Students</h2>', _table(seated, now, budget), "</section><aside>",
             _waiting(waiting), "<h2>Failing most right now</h2>", _failing_most(reporting),
             "<h2>Progress per lesson</h2>", _lessons(reporting), "</aside></div>"]
    return "\n".join(parts)


def csv_text(students: list[Student], now: float | None = None) -> str:
    now = time.time() if now is None else now
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["name", "seat", "lesson", "checks_passed", "checks_total", "last_check_utc", "stuck_minutes", "failing",
                     "tokens_in", "tokens_out", "requests"])
    for student in students:
        stuck = student.stuck_for(now)
        last = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(student.last_at)) if student.last_at else ""
        writer.writerow(csv_row([student.name, student.state, "" if student.lesson is None else student.lesson, student.passed, student.total,
                                 last, "" if stuck is None else round(stuck / 60, 1), " ".join(student.failing), student.tokens_in,
                                 student.tokens_out, student.requests]))
    return out.getvalue()


def ordered(students: list[Student], now: float) -> list[Student]:
    """Stuck longest first (to the minute, then by name): the rows an instructor should walk to are at the top."""
    def key(student: Student) -> tuple:
        stuck = student.stuck_for(now)
        return (1 if stuck is None else -(stuck // 60), student.lesson is None, student.name.casefold())

    return sorted(students, key=key)


def _failing_most(students: list[Student]) -> str:
    counts = Counter(check for student in students for check in student.failing)
    if not counts:
        return '<p class="quiet">Nothing is failing.</p>'
    items = "".join(f'<li><span class="count">{count}</span> <code>{escape(check)}</code> {escape(_title(check))}</li>'
                    for check, count in counts.most_common(FAILING_SHOWN))
    return f'<ul class="failing">{items}</ul>'


def _lessons(students: list[Student]) -> str:
    if not students:
        return '<p class="quiet">No reports yet.</p>'
    rows = []
    for lesson in range(max(student.lesson for student in students) + 1):
        done = sum(student.lesson > lesson or (student.lesson == lesson and not student.failing) for student in students)
        working = sum(student.lesson == lesson and bool(student.failing) for student in students)
        rows.append(f'<tr><th>lesson {lesson}</th><td><meter min="0" max="{len(students)}" value="{done}"></meter></td>'
                    f'<td>{done} done</td><td>{working} working</td></tr>')
    return f'<table class="lessons">{"".join(rows)}</table>'


def _table(students: list[Student], now: float, budget: int | None) -> str:
    if not students:
        return '<p class="quiet">No one has joined yet.</p>'
    head = "<th>student</th><th>lesson</th><th>checks passed</th><th>last check</th><th>stuck for</th><th>failing</th>"
    head += f"<th>tokens (of {_short(budget)})</th>" if budget is not None else ""
    rows = []
    for student in ordered(students, now):
        stuck = student.stuck_for(now)
        state = "waiting" if student.lesson is None else "done" if not student.failing else "stuck" if stuck and stuck >= STUCK_WARN else "working"
        cells = [f'<span title="{escape(student.name)}">{escape(student.name)}</span>', "–" if student.lesson is None else str(student.lesson),
                 f"{student.passed}/{student.total}" if student.lesson is not None else "–",
                 _ago(now - student.last_at) + " ago" if student.last_at else "never",
                 "✓ all pass" if state == "done" else _ago(stuck) if stuck is not None else "–",
                 _first_failing(student.failing)]
        if budget is not None:
            cells.append(f'<span title="{student.tokens:,} of {budget:,}">{_short(student.tokens)} · {100 * student.tokens // budget}%</span>')
        rows.append(f'<tr class="{state}">' + "".join(f'<td class="{CELL_CLASSES.get(index, "")}">{cell}</td>' if index in CELL_CLASSES
                                                      else f"<td>{cell}</td>" for index, cell in enumerate(cells)) + "</tr>")
    return f'<table class="students"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _first_failing(failing: tuple[str, ...]) -> str:
    """The first failing check, how many more, and the first's title: one line per student, cut to the width."""
    if not failing:
        return ""
    more = f' <span class="more">+{len(failing) - 1}</span>' if len(failing) > 1 else ""
    title = _title(failing[0])  # cut to what the column has room for: a wide screen shows more of it
    said = f' <span class="why"><span>{escape(title)}</span></span>' if title else ""
    return f'<div class="first"><code title="{escape(" ".join(failing))}">{escape(failing[0])}</code>{more}{said}</div>'


def _short(tokens: int) -> str:
    """12,345 as 12k, 1,250,000 as 1.2M: a figure that reads at a glance from the back of the room."""
    if tokens < 1000:
        return str(tokens)
    if tokens < 1_000_000:
        return f"{tokens // 1000}k"
    return f"{tokens / 1_000_000:.1f}M"


def _ago(seconds: float) -> str:
    seconds = int(max(0, seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


@lru_cache(maxsize=1)
def _titles() -> dict[str, str]:
    from grader.course import kit

    return {check.id: check.title for lesson in kit.lessons() for check in lesson.checks}


def _title(check_id: str) -> str:
    return _titles().get(check_id, "")


def _waiting(students: list[Student]) -> str:
    if not students:
        return ""
    items = "".join(f'<li><span class="name" title="{escape(student.name)}">{escape(student.name)}</span> '
                    f'<button data-action="approve" data-name="{escape(student.name)}">Approve</button> '
                    f'<button data-action="remove" data-name="{escape(student.name)}">Refuse</button></li>' for student in students)
    return f'<h2>Waiting for approval</h2><ul class="waiting">{items}</ul>'
