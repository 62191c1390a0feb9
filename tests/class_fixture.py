"""A graded class made up without grading anyone: for the report's layout, which needs many rows, not real runs."""
from __future__ import annotations

from pathlib import Path

from grader.classroom.bulk import ClassRun, Student
from grader.course import kit
from grader.grading.runner import Outcome

NOT_IMPORTING = ("not run: the rover package does not import (SyntaxError in rover/tools/edit.py line 58: "
                 "invalid syntax (edit.py, line 58))")
NAMES = ["Ada Lovelace", "Grace Hopper-Brewster", "Alan Turing", "Katherine Johnson", "Edsger Dijkstra", "Barbara Liskov",
         "Donald Knuth", "Margaret Hamilton", "Ken Thompson", "Frances Allen", "John Backus", "Radia Perlman",
         "Dennis Ritchie", "Hedy Lamarr", "Tim Berners-Lee", "Sophie Wilson"]


def made_up_class(lesson: int = 3, broken: tuple[int, ...] = (1,), size: int = 16) -> ClassRun:
    """`size` students at `lesson`: student k passes the lesson's first 13 - k % 7 checks; the `broken` ones'
    rover does not import, so every check errors with the same message, as `workshop check --json` reports it."""
    checks = [check for number in range(lesson + 1) for check in kit.lesson(number).checks]
    students = []
    for number, name in enumerate((NAMES * (size // len(NAMES) + 1))[:size]):
        if number in broken:
            outcomes = [Outcome(check, "error", NOT_IMPORTING) for check in checks]
        else:
            own = [check for check in checks if check.lesson == lesson]
            failing = {check.id for check in own[len(own) - number % 7:]} if number % 7 else set()
            outcomes = [Outcome(check, "failed" if check.id in failing else "passed",
                                "expected 3 lines, got 2" if check.id in failing else "") for check in checks]
        students.append(Student(name, f"class/{name}", Path(f"/class/{name}"), lesson, outcomes))
    students.append(Student("notes", "class/notes", problem="not a Rover workspace (no .copier-answers.yml)"))
    return ClassRun(students, 12.5, "bwrap")
