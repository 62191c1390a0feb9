"""Grade a workspace: which checks apply, their outcomes, and the report in each format."""
from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from grader.course import kit
from grader.grading.runner import Outcome, run_suite
from grader.course.workspace import ANSWERS, Workspace, here


@dataclass(frozen=True)
class Grade:
    lesson: int
    outcomes: list[Outcome]
    root_cause: str | None = None  # set when the workspace's rover package could not even be imported (file, line, error)
    sandbox: str = ""  # the boundary the student's code ran in: bwrap, seatbelt or process (reports state it)

    @property
    def passed(self) -> bool:
        return all(outcome.passed for outcome in self.outcomes)

    @property
    def score(self) -> int:
        return sum(outcome.check.points for outcome in self.outcomes if outcome.passed)

    @property
    def max_score(self) -> int:
        return sum(outcome.check.points for outcome in self.outcomes)

    def first_failure(self) -> Outcome | None:
        """The first check the code failed; a check the machine was too busy to finish is not one."""
        return next((outcome for outcome in self.outcomes if not outcome.passed and not outcome.busy), None)

    def as_json(self) -> dict:
        return {
            "lesson": self.lesson,
            "passed": self.passed,
            "score": self.score,
            "max_score": self.max_score,
            "sandbox": self.sandbox,
            "checks": [
                {
                    "id": outcome.check.id,
                    "lesson": outcome.check.lesson,
                    "title": outcome.check.title,
                    "status": outcome.status,
                    "message": outcome.message,
                    "hints": [] if outcome.passed else list(outcome.check.hints),
                    "points": outcome.check.points,
                }
                for outcome in self.outcomes
            ],
        }


def checks_up_to(lesson: int) -> list[kit.Check]:
    """Every check of lessons 0..lesson: earlier lessons keep counting, so regressions show."""
    return [check for number in range(lesson + 1) for check in kit.lesson(number).checks]


def grade(workspace: Workspace, only: int | None = None, on_outcome=None, on_start=None, replays: dict[str, str] | None = None) -> Grade:
    """Grade the workspace's lesson (every check so far), or `only` lesson N's own checks; `on_outcome` sees each as it
    lands, `on_start` each as a lane takes it, `replays` carries test runs to the next grading (runner.run_suite)."""
    checks = list(kit.lesson(only).checks) if only is not None else checks_up_to(workspace.lesson)
    suite = run_suite(workspace.path, checks, on_outcome=on_outcome, on_start=on_start, replays=replays)
    return Grade(workspace.lesson, suite.outcomes, suite.root_cause, suite.sandbox)


def dumps(grade: Grade) -> str:
    return json.dumps(grade.as_json(), indent=2)


def workspace_for(lesson: str | None) -> Workspace:
    """The workspace around the current directory; with `lesson` (from `--lesson N`), graded as lesson N
    whatever its answers file says (a student can edit that file; bulk grading and autograders pin the lesson)."""
    if lesson is None:
        return here()
    last = len(kit.lessons()) - 1
    if not lesson.strip().isdigit() or int(lesson) > last:
        from grader.errors import WorkshopError

        raise WorkshopError(f"--lesson {lesson}: not a lesson of this kit; give a number from 0 to {last}")
    start = Path.cwd().resolve()
    folder = next((folder for folder in (start, *start.parents) if (folder / ANSWERS).is_file()), None)
    return Workspace(folder, int(lesson)) if folder else here()


@contextlib.contextmanager
def written_atomically(path: Path):
    """Yield a temp path beside `path`, renamed onto it only once the report is whole: a killed run leaves none."""
    temp = path.with_name(f".{path.name}.partial-{os.getpid()}")
    try:
        yield temp
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)
