"""The screen `workshop check` and `workshop watch` draw, the root cause `hint` and `status` share, and `say`.

The current lesson is shown in full: every check, and under each failing one its message and
first hint. Earlier lessons that pass fold into one line (`lessons 0-3: 42/42 ✓`); a lesson with
a regression opens up like the current one. Rows never wrap: a long title ends in "…", so the
screen holds together at 80 columns. When the rover package cannot even be imported, every
check fails for that one reason, so the screen shows the reason once, with the line of code.
`say` is how the other commands print prose: wrapped to the terminal, never splitting a word.
"""
from __future__ import annotations

import re
import shutil
import textwrap
from pathlib import Path

import click

from grader.course import kit
from grader.grading.grade import Grade
from grader.grading.runner import Outcome

MARKS = {"passed": ("✓", "green"), "failed": ("✗", "red"), "error": ("✗", "red"), "timeout": ("⧗", "yellow")}
ID_WIDTH = 30  # longer check ids are cut; titles take what is left of the line
NBSP = "\u00a0"


IMPORT_FAILURES = ("SyntaxError", "IndentationError", "TabError", "ImportError", "ModuleNotFoundError")


def root_cause(result: Grade) -> str | None:
    """Why the failing checks could not run at all: the grader's own finding, or else every failing check
    erroring with one same message (any message when nothing passed, an import failure when some did)."""
    if result.root_cause:
        return result.root_cause
    failing = [outcome for outcome in result.outcomes if not outcome.passed]
    messages = {outcome.message for outcome in failing}
    if len(failing) < 2 or len(messages) != 1 or any(outcome.status != "error" for outcome in failing):
        return None
    message = messages.pop()
    return message if len(failing) == len(result.outcomes) or message.startswith(IMPORT_FAILURES) else None


def blocked(result: Grade) -> list[Outcome]:
    """The outcomes the root cause stopped: every failing one."""
    return [outcome for outcome in result.outcomes if not outcome.passed] if root_cause(result) else []


def location(cause: str) -> tuple[str, int] | None:
    """The (file, line) a failure message names: `in rover/x.py line 4`, `rover/x.py:4` or `"x.py", line 4`."""
    found = re.search(r"(\S+\.py)(?:\"?,? line |:)(\d+)", cause) or re.search(r"in (\S+) line (\d+)", cause)
    return (found[1].strip("\"'"), int(found[2])) if found else None


def show(result: Grade, everything: bool = False, pending: bool = False, workspace: Path | None = None, console=None) -> None:
    """Draw the grade. `everything` opens every lesson; `pending` says the earlier lessons are still being graded."""
    from rich.console import Console

    console = console or Console(highlight=False)
    console.print(f"[bold]Lesson {result.lesson}: {_markup(kit.lesson(result.lesson).title)}[/]")
    cause = root_cause(result)
    if cause:
        _show_root_cause(console, result, cause, workspace)
    else:
        _show_lessons(console, result, everything, pending)
    console.print()
    console.print(next_step(result, pending))


def next_step(result: Grade, pending: bool = False) -> str:
    """The closing lines: the count, then what to do now (rich markup)."""
    cause = root_cause(result)
    passed = sum(outcome.passed for outcome in result.outcomes)
    count = f"{passed}/{len(result.outcomes)} checks pass."
    if cause:
        where = location(cause)
        spot = _markup(f"{where[0]} line {where[1]}") if where else "the error above"
        return f"[red]{count}[/]\nNext: fix {spot}; then the checks can run again."
    first = result.first_failure()
    if first is None and any(outcome.busy for outcome in result.outcomes):  # not the code's doing: never a failure
        return f"[yellow]{sum(outcome.busy for outcome in result.outcomes)} check(s) could not finish: the machine was too busy.[/] Run `workshop check` again."
    if first is None and pending:
        return f"[green]All {passed} checks of lesson {result.lesson} pass.[/] Checking the earlier lessons…"
    if first is None:
        score = f"Score {result.score}/{result.max_score}."
        if result.lesson + 1 >= len(kit.lessons()):
            return f"[green]All {passed} checks pass.[/] {score} That was the last lesson: Rover is complete."
        return f"[green]All {passed} checks pass.[/] {score} Ready for `workshop next`."
    file = kit.lesson(first.check.lesson).file
    again = " (it passed before: a regression)" if first.check.lesson < result.lesson else ""
    return f"{count}\nNext: {first.check.id} in {file}{again}. Stuck? `workshop hint {first.check.id}`"


def _show_lessons(console, result: Grade, everything: bool, pending: bool) -> None:
    by_lesson: dict[int, list[Outcome]] = {}
    for outcome in result.outcomes:
        by_lesson.setdefault(outcome.check.lesson, []).append(outcome)
    folded: list[int] = []  # a run of earlier lessons that all pass, shown as one line
    for number in range(result.lesson + 1):
        outcomes = by_lesson.get(number, [])
        passing = bool(outcomes) and all(outcome.passed for outcome in outcomes)
        if number < result.lesson and not everything and (passing or (pending and not outcomes)):
            folded.append(number)
            continue
        _fold(console, folded, by_lesson)
        folded = []
        if outcomes:
            _show_lesson(console, number, outcomes, result.lesson)
    _fold(console, folded, by_lesson)


def _fold(console, numbers: list[int], by_lesson: dict[int, list[Outcome]]) -> None:
    if not numbers:
        return
    name = f"lesson {numbers[0]}" if len(numbers) == 1 else f"lessons {numbers[0]}-{numbers[-1]}"
    outcomes = [outcome for number in numbers for outcome in by_lesson.get(number, [])]
    if not outcomes:
        console.print(f"[dim]{name}: checking…[/]")
    else:
        console.print(f"{name}: {len(outcomes)}/{len(outcomes)} [green]✓[/]")


def _show_lesson(console, number: int, outcomes: list[Outcome], current: int) -> None:
    from rich.text import Text

    passed = sum(outcome.passed for outcome in outcomes)
    lesson = kit.lesson(number)
    fresh = number == current and passed == 0
    note = f", your lesson: open {lesson.file}" if fresh else (
        ", passed before: a change since broke it" if number < current and passed < len(outcomes) else "")
    console.print(f"lesson {number} ({_markup(lesson.title)}): {passed}/{len(outcomes)}[dim]{_markup(note)}[/]",
                  no_wrap=True, overflow="ellipsis")
    width = min(ID_WIDTH, max(len(outcome.check.id) for outcome in outcomes))
    said: dict[str, str] = {}  # message -> the first check that said it, so a shared crash is told once
    for outcome in outcomes:
        mark, colour = MARKS[outcome.status]
        row = Text.assemble("  ", (mark, colour), " ", (outcome.check.id[:width].ljust(width), "bold" if not outcome.passed else ""),
                            "  ", (outcome.check.title, "" if not outcome.passed else "dim"))
        console.print(row, no_wrap=True, overflow="ellipsis")
        if not outcome.passed:
            _details(console, outcome, said)


def _details(console, outcome: Outcome, said: dict[str, str]) -> None:
    from rich.padding import Padding
    from rich.text import Text

    if outcome.status == "error" and outcome.message in said:
        console.print(Padding(Text(f"the same error as {said[outcome.message]}", style="dim"), (0, 0, 0, 6), expand=False))
        return
    said.setdefault(outcome.message, outcome.check.id)
    status = {"error": "crashed: ", "timeout": "timed out: "}.get(outcome.status, "")
    console.print(Padding(Text(status + (outcome.message or "(no message)")), (0, 0, 0, 6), expand=False))
    console.print(Padding(Text.assemble(("hint: ", "yellow"), outcome.check.hints[0]), (0, 0, 0, 6), expand=False))


def _show_root_cause(console, result: Grade, cause: str, workspace: Path | None) -> None:
    from rich.padding import Padding
    from rich.text import Text

    stopped = len(blocked(result))
    how_many = "no check can run" if stopped == len(result.outcomes) else f"{stopped} of {len(result.outcomes)} checks cannot run"
    console.print(Text.assemble(("✗ ", "red"), (f"rover does not import, so {how_many}:", "bold")))
    console.print(Padding(Text(cause), (0, 0, 0, 2), expand=False))
    code = source_line(cause, workspace)
    if code:
        console.print(Padding(Text(code, style="cyan"), (0, 0, 0, 2), expand=False), no_wrap=True, overflow="ellipsis")
    console.print(Padding(Text(f"They all stop at this one error; fix it and they run again. "
                               f"{traceback_command(cause)} shows the full traceback.", style="dim"), (0, 0, 0, 2), expand=False))


def traceback_command(cause: str) -> str:
    """The command that imports the module a cause names, so Python shows its own full traceback."""
    where = location(cause)
    module = where[0].removesuffix(".py").replace("/", ".") if where and where[0].startswith("rover/") else "rover.tools"
    return f'`python -c "import {module}"`'


def source_line(cause: str, workspace: Path | None = None) -> str | None:
    """`  43 | the code`, for the file and line a failure names, read from the workspace."""
    where = location(cause)
    if not where:
        return None
    path = (workspace or Path.cwd()) / where[0]
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return f"{where[1]:>4} | {lines[where[1] - 1]}" if 0 < where[1] <= len(lines) else None


def _markup(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def say(text: str, indent: str = "", err: bool = False) -> None:
    """Plain text wrapped to the terminal at word boundaries (a `command` never splits), keeping its line breaks."""
    width = max(40, shutil.get_terminal_size().columns - 1)
    for line in text.splitlines() or [""]:
        whole = re.sub(r"`[^`]*`", lambda command: command[0].replace(" ", NBSP), line)
        click.echo(textwrap.fill(whole, width, initial_indent=indent, subsequent_indent=indent + "  ",
                                 break_long_words=False, break_on_hyphens=False).replace(NBSP, " ") or indent, err=err)
