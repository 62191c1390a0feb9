"""`workshop dev check`: prove the course is sound before a class sees it.

For every lesson: the manifest, text, scenario and solution are all there; every requirement
the text tags (`[R5.3]`) is tested by a check and every check tests one (lessons/lesson-N/requirements.toml),
and what a check demands is said by the sentence it cites; the solved render carries the solution byte for byte; every check fails on the stub; every check of
lessons 0..N passes on the solution and on every alternative in tests/fixtures/alternatives.toml;
and every wrong solution in tests/fixtures/wrong_solutions.toml fails the checks it names.
"""
from __future__ import annotations

import re
import shutil
import sys
import tempfile
from pathlib import Path

import click

from grader.course import fixtures, kit
from grader.grading.grade import checks_up_to
from grader.grading.runner import run_checks
from grader.course.render import render


TAG = re.compile(r"\[R(\d+)\.(\d+)\]")
BLOCK_START = re.compile(r"^\s*($|[-*] |\d+\. |#)")  # a blank line, a list item or a heading starts a new block


def tagged_sentences(text: str) -> dict[str, str]:
    """Each requirement tag of a lesson text (`R5.3`), with the text it closes: its paragraph or list item since
    the previous tag, and the code blocks right after it (where a notice's exact format is shown)."""
    blocks: list[tuple[bool, str]] = []
    current: list[str] = []
    for line in text.splitlines() + [""]:
        if BLOCK_START.match(line) and current:
            blocks.append((current[0].startswith("    "), " ".join(part.strip() for part in current)))
            current = []
        if line.strip():
            current.append(line)
    found: dict[str, str] = {}
    last = None
    for is_code, block in blocks:
        if is_code and last:
            found[last] += " " + block
            continue
        start, last = 0, None
        for match in TAG.finditer(block):  # the text since the block's previous tag
            last = f"R{match[1]}.{match[2]}"
            found.setdefault(last, block[start:match.end()])
            start = match.end()
    return found


def trace_problems(lesson: kit.Lesson) -> list[str]:
    """Requirements traced to checks: every tagged sentence has a check, every check a sentence, every demand its words."""
    if not lesson.requirements_table.is_file():
        return [f"{lesson.id}: no requirements table ({lesson.requirements_table.relative_to(kit.root())})"]
    text = lesson.text.read_text(encoding="utf-8")
    tags = [f"R{match[1]}.{match[2]}" for match in TAG.finditer(text)]
    sentences = tagged_sentences(text)
    requirements = lesson.requirements()
    listed, ids = {requirement.id for requirement in requirements}, {check.id for check in lesson.checks}
    problems = [f"{tag}: tagged twice in the text" for tag in sorted({tag for tag in tags if tags.count(tag) > 1})]
    problems += [f"{tag}: tagged in the text, but not in requirements.toml" for tag in sorted(set(tags) - listed)]
    problems += [f"{tag}: in requirements.toml, but no sentence of the text is tagged [{tag}]" for tag in sorted(listed - set(tags))]
    problems += [f"{tag}: a requirement of another lesson's number" for tag in sorted(set(tags) | listed) if not tag.startswith(f"R{lesson.number}.")]
    for requirement in requirements:
        if not requirement.checks:
            problems.append(f"{requirement.id}: no check tests it")
        problems += [f"{requirement.id}: cites {check_id}, which is not a check of {lesson.id}" for check_id in requirement.checks if check_id not in ids]
        sentence = sentences.get(requirement.id, "").lower()
        problems += [f"{requirement.id}: its checks demand {word!r}, which its sentence does not say" for word in requirement.demands
                     if requirement.id in sentences and word.lower() not in sentence]
    cited = {check_id for requirement in requirements for check_id in requirement.checks}
    problems += [f"{check.id}: tests no requirement of the text (cite it in requirements.toml)" for check in lesson.checks if check.id not in cited]
    return problems


def lesson_problems(lesson: kit.Lesson, scratch: Path) -> list[str]:
    problems = _authoring_problems(lesson) + trace_problems(lesson)
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


def fixture_problems(lesson: kit.Lesson, scratch: Path) -> tuple[list[str], int, int]:
    """Problems with lesson N's fixtures, and how many wrong and alternative solutions it has."""
    try:
        wrong, alternatives = fixtures.load(fixtures.WRONG, lesson.number), fixtures.load(fixtures.ALTERNATIVES, lesson.number)
    except fixtures.FixtureOutOfDate as stale:
        return [f"fixture out of date: {stale}"], 0, 0
    if not wrong and not alternatives:
        return [], 0, 0
    solved = scratch / f"{lesson.id}-solved"
    if not solved.is_dir():
        render(lesson.number, solved, solved=True)
    problems = []
    for number, case in enumerate(wrong + alternatives):
        copy = scratch / f"{lesson.id}-case-{number}"
        shutil.copytree(solved, copy, symlinks=True)
        try:
            problems += _case_problems(case, copy, lesson, is_wrong=number < len(wrong))
        finally:
            shutil.rmtree(copy, ignore_errors=True)
    return problems, len(wrong), len(alternatives)


def _case_problems(case: fixtures.Case, workspace: Path, lesson: kit.Lesson, is_wrong: bool) -> list[str]:
    try:
        case.apply(workspace)
    except fixtures.FixtureOutOfDate as stale:
        return [f"fixture out of date: {stale}"]
    if is_wrong:
        named = [check for check in kit.lesson(case.lesson).checks if check.id in case.catches]
        unknown = sorted(set(case.catches) - {check.id for check in named})
        if unknown or not named:
            return [f"wrong solution {case.name!r} names no check of {lesson.id} it should fail: {unknown or '(none)'}"]
        slipped = [outcome.check.id for outcome in run_checks(workspace, named) if outcome.passed]
        return [f"wrong solution {case.name!r} slips through {', '.join(slipped)}"] if slipped else []
    return [
        f"alternative {case.name!r} fails {outcome.check.id} ({outcome.status}): {outcome.message}"
        for outcome in run_checks(workspace, checks_up_to(lesson.number)) if not outcome.passed
    ]


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
@click.option("--fixtures/--no-fixtures", "with_fixtures", default=True, show_default=True,
              help="Also run the wrong solutions and alternatives of tests/fixtures/.")
def dev_check_command(only: int | None, with_fixtures: bool) -> None:
    """Every check fails on its lesson's stub and passes on its solution and its alternatives; every wrong solution is caught."""
    lessons = [kit.lesson(only)] if only is not None else list(kit.lessons())
    failed = False
    with tempfile.TemporaryDirectory(prefix="workshop-dev-") as scratch:
        for lesson in lessons:
            problems = lesson_problems(lesson, Path(scratch))
            found, wrong, alternatives = fixture_problems(lesson, Path(scratch)) if with_fixtures else ([], 0, 0)
            problems += found
            failed = failed or bool(problems)
            mark = click.style("✗", fg="red") if problems else click.style("✓", fg="green")
            proven = ", stub fails all, solution passes all"
            if with_fixtures:
                proven += f", {wrong} wrong solutions caught, {alternatives} alternatives pass"
            click.echo(f"{mark} {lesson.id} ({lesson.title}): {len(lesson.checks)} checks" + ("" if problems else proven))
            for problem in problems:
                click.echo(f"    {problem}")
    sys.exit(1 if failed else 0)
