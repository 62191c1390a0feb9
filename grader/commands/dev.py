"""`workshop dev check`: prove the course is sound before a class sees it.

For every lesson: the manifest, text, scenario and solution are all there; the solved
render carries the solution byte for byte; every check fails on the stub; and every check
of lessons 0..N passes on the solution.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import click

from grader.course import kit
from grader.grading.grade import checks_up_to
from grader.grading.runner import run_checks
from grader.course.render import render


def lesson_problems(lesson: kit.Lesson, scratch: Path) -> list[str]:
    problems = _authoring_problems(lesson)
    stub = render(lesson.number, scratch / f"{lesson.id}-stub")
    solved = render(lesson.number, scratch / f"{lesson.id}-solved", solved=True)
    if (solved / lesson.file).read_bytes() != lesson.solution.read_bytes():
        problems.append(f"{lesson.file} rendered solved differs from {lesson.solution.relative_to(kit.root())}")
    for outcome in run_checks(stub, list(lesson.checks)):
        if outcome.passed:
            problems.append(f"{outcome.check.id} passes on the stub: it cannot tell unfinished work from finished")
    for outcome in run_checks(solved, checks_up_to(lesson.number)):
        if not outcome.passed:
            problems.append(f"{outcome.check.id} does not pass on the solution ({outcome.status}): {outcome.message}")
    return problems


def _authoring_problems(lesson: kit.Lesson) -> list[str]:
    from grader.grading import checks

    problems = [f"{lesson.id}: missing {path.relative_to(kit.root())}" for path in (lesson.text, lesson.script, lesson.stub, lesson.solution) if not path.is_file()]
    checks.load(lesson.number)
    module = f"grader.grading.checks.lesson_{lesson.number}"
    written = {check_id for check_id, function in checks.REGISTRY.items() if function.__module__ == module}
    listed = {check.id for check in lesson.checks}
    problems += [f"{check_id}: in grader/grading/checks/lesson_{lesson.number}.py but not in the manifest" for check_id in sorted(written - listed)]
    problems += [f"{check_id}: in the manifest but has no check function" for check_id in sorted(listed - written)]
    problems += [f"{check.id}: needs at least two hints (a nudge, then the technique)" for check in lesson.checks if len(check.hints) < 2]
    import yaml  # copier's own dependency; authoring only, never on the check path

    last = len(kit.lessons()) - 1
    if lesson.number == last and yaml.safe_load((kit.root() / "copier.yml").read_text(encoding="utf-8"))["last_lesson"]["default"] != last:
        problems.append(f"copier.yml: last_lesson should default to {last}, the manifest's last lesson")
    return problems


@click.group("dev")
def dev_group() -> None:
    """Commands for course authors."""


@dev_group.command("check")
@click.option("--lesson", "only", type=int, help="Check one lesson only.")
def dev_check_command(only: int | None) -> None:
    """Every check fails on its lesson's stub and passes on its solution."""
    lessons = [kit.lesson(only)] if only is not None else list(kit.lessons())
    failed = False
    with tempfile.TemporaryDirectory(prefix="workshop-dev-") as scratch:
        for lesson in lessons:
            problems = lesson_problems(lesson, Path(scratch))
            failed = failed or bool(problems)
            mark = click.style("✗", fg="red") if problems else click.style("✓", fg="green")
            click.echo(f"{mark} {lesson.id} ({lesson.title}): {len(lesson.checks)} checks" + ("" if problems else ", stub fails all, solution passes all"))
            for problem in problems:
                click.echo(f"    {problem}")
    sys.exit(1 if failed else 0)
