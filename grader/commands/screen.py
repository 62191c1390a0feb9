"""The screen `workshop check` and `workshop watch` draw, the root cause `hint` and `status` share, and `say`.

The current lesson is shown with its first failure in full (the message and the first hint),
and the first failure of a real mistake too when that is another; every other failure is one
row, and the checks that fail only because the tool is not written yet fold into one line. So a
stub lesson fits one screen at 80 columns. Earlier lessons that pass fold into one line
(`lessons 0-3: 42/42 ✓`); a lesson with a regression opens up like the current one. A title too
long for its row goes on under itself, wrapped at words, never cut. When the rover package cannot even be imported,
every check fails for that one reason, so the screen shows the reason once, with the line of code,
or names the file that is missing. `say` is how the other commands print prose: wrapped to the
terminal, never splitting a word.
"""
from __future__ import annotations

import re
import shutil
import textwrap
from pathlib import Path

import click

from grader.course import kit
from grader.course.conflicts import explained, unresolved
from grader.course.progress import remember
from grader.grading.grade import Grade
from grader.grading.runner import SIDE_BROKEN, Outcome

MARKS = {"passed": ("✓", "green"), "failed": ("✗", "red"), "error": ("✗", "red"), "timeout": ("⧗", "yellow")}
ID_WIDTH = 30  # longer check ids are cut; titles take what is left of the line
NBSP = "\u00a0"
NOT_WRITTEN = "not written yet"
IMPORT_FAILURES = ("SyntaxError", "IndentationError", "TabError", "ImportError", "ModuleNotFoundError")
ESSENTIAL = ("rover", "rover/__init__.py", "rover/tools", "rover/tools/__init__.py")  # without these nothing imports


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


def missing_file(workspace: Path | None, cause: str | None = None) -> str | None:
    """The part of the rover package that is gone, when that is why it does not import: `rover/tools/__init__.py`."""
    if workspace is None:
        return None
    for part in ESSENTIAL:
        if not (workspace / part).exists():
            return part + ("/" if "." not in part else "")
    named = re.search(r"No module named '(rover(?:\.\w+)+)'", cause or "")
    if named:
        path = named[1].replace(".", "/")
        if not (workspace / f"{path}.py").exists() and not (workspace / path).is_dir():
            return f"{path}.py"
    return None


def missing_said(part: str, workspace: Path) -> str:
    """One sentence for `hint`, `demo` and `next`: what is gone, and the command that brings it back."""
    return f"{part} is missing, so rover cannot even be imported; bring it back with {restore_command(part, workspace)}"


def restore_command(part: str, workspace: Path | None = None) -> str:
    """The git command that brings `part` back: from HEAD, or from before the commit that deleted it."""
    path = part.rstrip("/")
    if workspace is not None and not _git_has(workspace, f"HEAD:{path}"):
        import subprocess

        deleted = subprocess.run(["git", "log", "-n1", "--format=%h", "--diff-filter=D", "HEAD", "--", path], cwd=workspace,
                                 capture_output=True, text=True).stdout.strip()
        if deleted and _git_has(workspace, f"{deleted}~1:{path}"):
            return f"`git checkout {deleted}~1 -- {path}`"
        return "`workshop reset --all`"
    return f"`git checkout HEAD -- {path}`"


def _git_has(workspace: Path, spec: str) -> bool:
    import subprocess

    return subprocess.run(["git", "cat-file", "-e", spec], cwd=workspace, capture_output=True).returncode == 0


def location(cause: str) -> tuple[str, int] | None:
    """The (file, line) a failure message names: `in rover/x.py line 4`, `rover/x.py:4` or `"x.py", line 4`."""
    found = re.search(r"(\S+\.py)(?:\"?,? line |:)(\d+)", cause) or re.search(r"in (\S+) line (\d+)", cause)
    return (found[1].strip("\"'"), int(found[2])) if found else None


def show(result: Grade, everything: bool = False, pending: bool = False, workspace: Path | None = None, console=None,
         footer: str | None = None) -> None:
    """Draw the grade. `everything` opens every lesson and failure; `pending` says the earlier lessons are still
    being graded; `footer` (rich markup) goes just above the closing lines, which are always the last thing shown."""
    from rich.console import Console
    from rich.text import Text

    console = console or Console(highlight=False)
    console.print(heading(f"Lesson {result.lesson}: {kit.lesson(result.lesson).title}", console.width, style="bold"))
    cause = root_cause(result)
    conflicts = unresolved(workspace) if cause else []  # an unfinished merge is why, not the syntax error it causes
    if conflicts:
        console.print(Text.assemble(("✗ ", "red"), ("An unfinished merge, so no check can run:", "bold")))
        paragraph(console, explained(workspace, conflicts, result.lesson)[0], 2)
    elif cause or missing_file(workspace, None):
        _show_root_cause(console, result, cause or "", workspace)
    else:
        _show_lessons(console, result, everything, pending, remember(workspace, result.outcomes) if workspace else set())
    console.print()
    if footer:
        print_wrapped(console, footer)
    print_wrapped(console, next_step(result, pending, workspace))


def next_step(result: Grade, pending: bool = False, workspace: Path | None = None) -> str:
    """The closing lines: the count, then what to do now (rich markup)."""
    cause = root_cause(result)
    passed = sum(outcome.passed for outcome in result.outcomes)
    count = f"{passed}/{len(result.outcomes)} checks pass."
    gone = missing_file(workspace, cause)
    if gone:
        return f"[red]{count}[/]\nNext: bring back {_markup(gone)}: {_markup(restore_command(gone, workspace))}."
    if cause and unresolved(workspace):
        return (f"[red]{count}[/]\nNext: finish the merge as above; or undo the move to lesson {result.lesson} with "
                f"{_markup(explained(workspace, unresolved(workspace), result.lesson)[1])}.")
    if cause and cause.startswith(SIDE_BROKEN):
        return (f"[red]{count}[/]\nNext: nothing to change in your code. Show this to your instructor; "
                "`WORKSHOP_SANDBOX=process workshop check` grades without the sandbox meanwhile.")
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
    passed_before = remember(workspace, result.outcomes) if workspace is not None else set()
    again = "" if first.check.lesson >= result.lesson else (
        " (it passed before: a regression)" if first.check.lesson in passed_before else f" (lesson {first.check.lesson} is unfinished)")
    return f"{count}\nNext: {first.check.id} in {file}{again}. Stuck? `workshop hint {first.check.id}`"


def _show_lessons(console, result: Grade, everything: bool, pending: bool, passed_before: set[int] = frozenset()) -> None:
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
            _show_lesson(console, number, outcomes, result.lesson, everything, number in passed_before)
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


def in_full(outcomes: list[Outcome], everything: bool = False) -> list[Outcome]:
    """The failures shown with message and hint: the first, and the first real one (not a stub's) if that is another."""
    failing = [outcome for outcome in outcomes if not outcome.passed]
    if everything:
        return failing
    real = next((outcome for outcome in failing if NOT_WRITTEN not in outcome.message), None)
    return list(dict.fromkeys(outcome for outcome in failing[:1] + [real] if outcome))


def _show_lesson(console, number: int, outcomes: list[Outcome], current: int, everything: bool = False,
                 passed_before: bool = False) -> None:
    from rich.text import Text

    passed = sum(outcome.passed for outcome in outcomes)
    lesson = kit.lesson(number)
    fresh = number == current and passed == 0
    note = f", your lesson: open {lesson.file}" if fresh else (
        "" if number >= current or passed == len(outcomes) else
        ", passed before: a change since broke it" if passed_before else ", unfinished")
    console.print(heading(f"lesson {number} ({lesson.title}): {passed}/{len(outcomes)}", console.width, note=note))
    width = min(ID_WIDTH, max(len(outcome.check.id) for outcome in outcomes))
    full = in_full(outcomes, everything)
    stubbed = [outcome for outcome in outcomes if not outcome.passed and outcome not in full and NOT_WRITTEN in outcome.message]
    if len(stubbed) < 2 or everything:
        stubbed = []
    for outcome in outcomes:
        if outcome in stubbed:
            if outcome is stubbed[0]:
                more = " more" if any(NOT_WRITTEN in shown.message for shown in full) else ""
                for line in wrapped(Text.assemble("  ", ("✗", "red"), f" {len(stubbed)}{more} checks: {NOT_WRITTEN}, in {lesson.file}"),
                                    console.width, 4):
                    console.print(line, no_wrap=True, overflow="crop")
            continue
        mark, colour = MARKS[outcome.status]
        row = Text.assemble("  ", (mark, colour), " ", (outcome.check.id[:width].ljust(width), "bold" if not outcome.passed else ""),
                            "  ", (outcome.check.title, "" if not outcome.passed else "dim"))
        for line in wrapped(row, console.width, 6 + width):  # a long title goes on under itself, whole
            console.print(line, no_wrap=True, overflow="crop")
        if outcome in full:
            _details(console, outcome)


def _details(console, outcome: Outcome) -> None:
    status = {"error": "crashed: ", "timeout": "timed out: "}.get(outcome.status, "")
    paragraph(console, status + (outcome.message or "(no message)"), 6)
    paragraph(console, outcome.first_hint, 6, label=("hint: ", "yellow"))


def paragraph(console, text: str, indent: int, style: str = "", label: tuple[str, str] | None = None) -> None:
    """`text` wrapped at words to the console's width, each line indented, its own line breaks kept; no padding."""
    from rich.text import Text

    whole = Text(" " * indent)
    if label:
        whole.append(label[0], style=label[1])
    whole.append(text, style=style)
    for line in wrapped(whole, console.width, indent):
        console.print(line, no_wrap=True, overflow="crop")


def print_wrapped(console, markup: str) -> None:
    """Rich markup, wrapped at words; a `command` in backticks is never split."""
    from rich.text import Text

    for line in wrapped(Text.from_markup(markup), console.width):
        console.print(line, no_wrap=True, overflow="crop")


def wrapped(text, width: int, indent: int = 0) -> list:
    """A rich Text cut into lines of at most `width` columns: between words, a `command` in backticks kept whole
    (unless longer than a line), its own line breaks kept, continuation lines indented by `indent`."""
    from rich.text import Text

    lines = []
    for part in text.split("\n", allow_blank=True):
        pieces = part.divide(_breaks(part.plain, width, indent))
        for number, piece in enumerate(pieces):
            line = piece if number == 0 else Text(" " * indent) + piece
            line.rstrip()
            lines.append(line)
    return lines


def _breaks(plain: str, width: int, indent: int) -> list[int]:
    """Where the lines of `plain` start, after the first."""
    breaks, start, lead, has_word = [], 0, 0, False
    for word in re.finditer(r"`[^`]*`\S*|\S+", plain):
        begin, end = word.span()
        if has_word and lead + end - start > width:
            breaks.append(begin)
            start, lead = begin, indent
        has_word = True
        while lead + end - start > width and width - lead > 0:  # a word longer than a line is cut
            start, lead = start + width - lead, indent
            breaks.append(start)
    return breaks


def fit(text: str, width: int) -> str:
    """`text` in `width` columns: whole, or cut after a word, with "…"."""
    if len(text) <= width:
        return text
    cut = text[:max(1, width - 1)]
    words = cut.rsplit(" ", 1)[0] if " " in cut else cut
    return words.rstrip(" ,;:(") + "…"


def heading(text: str, width: int, style: str = "", note: str = ""):
    """A one-line heading that fits `width`: `text`, then a dim `note`, cut at a word."""
    from rich.text import Text

    line = fit(text + note, width)
    return Text.assemble((line[:len(text)], style), (line[len(text):], "dim"))


def _show_root_cause(console, result: Grade, cause: str, workspace: Path | None) -> None:
    from rich.text import Text

    stopped = len(blocked(result)) or sum(not outcome.passed for outcome in result.outcomes)
    how_many = "no check can run" if stopped == len(result.outcomes) else f"{stopped} of {len(result.outcomes)} checks cannot run"
    gone = missing_file(workspace, cause)
    if gone:
        console.print(Text.assemble(("✗ ", "red"), (f"{gone} is missing, so {how_many}.", "bold")))
        what = "the rover package" if gone == "rover/" else "it"
        paragraph(console, f"It was in your workspace when the lesson started; {what} comes back from git with "
                           f"{restore_command(gone, workspace).strip('`')}.", 2, style="dim")
        return
    if cause.startswith(SIDE_BROKEN):
        console.print(Text.assemble(("✗ ", "red"), (f"{SIDE_BROKEN}, so {how_many}:", "bold")))
        paragraph(console, cause[len(SIDE_BROKEN):].lstrip(": "), 2)
        return
    console.print(Text.assemble(("✗ ", "red"), (f"rover does not import, so {how_many}:", "bold")))
    paragraph(console, cause, 2)
    code = source_line(cause, workspace)
    if code:
        console.print(Text("  " + code, style="cyan"), no_wrap=True, overflow="ellipsis")
    paragraph(console, f"They all stop at this one error; fix it and they run again. "
                       f"{traceback_command(cause)} shows the full traceback.", 2, style="dim")


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
