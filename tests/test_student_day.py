"""The student's day through the CLI: next, status, hint, lesson, watch, reset, solution, demo."""
from __future__ import annotations

import json
import os
import shutil
import sys
import subprocess
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from grader.course import kit
from grader.cli import main
from grader.course.workspace import Workspace
from grader.grading.grade import grade
from tests.conftest import next_passing


def run(*args: str, input: str | None = None, columns: int = 80):
    return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False, env={"COLUMNS": str(columns)})


def words(text: str) -> str:
    """Text with its wrapping undone."""
    return " ".join(text.split())


def git_log(folder) -> list[str]:
    return subprocess.run(["git", "log", "--format=%s"], cwd=folder, capture_output=True, text=True).stdout.splitlines()


@pytest.mark.slow
def test_the_whole_course_with_start_check_apply_and_next(started):
    root = started(0)
    last = len(kit.lessons()) - 1
    for lesson in range(last + 1):
        fresh = grade(Workspace.find(root), only=lesson).outcomes  # this lesson's own checks: the earlier ones are graded below
        assert fresh and not any(outcome.passed for outcome in fresh), f"lesson {lesson} starts with every check failing"
        if lesson == 0:  # the student's own edits, which must survive every step
            with open(root / "rover/display.py", "a") as display:
                display.write("\n\ndef banner() -> str:\n    return 'my Rover'\n")
            with open(root / "tests/test_loop.py", "a") as tests:
                tests.write("\n\ndef test_mine():\n    assert True\n")
        (root / "notes.txt").write_text(f"notes up to lesson {lesson}\n")  # uncommitted, every time
        assert run("solution", "--apply").exit_code == 0
        if lesson < last:  # the check at the end grades what every step applied; `next` grading first is tested below
            moved = run("next", "--force")
            assert moved.exit_code == 0, moved.output
            assert Workspace.find(root).lesson == lesson + 1
            assert (root / kit.lesson(lesson + 1).file).is_file(), "the new lesson's stub arrives"
    assert run("check").exit_code == 0, "every lesson passes at the end, the student's own edits included"
    assert "def banner() -> str:" in (root / "rover/display.py").read_text()
    assert "def test_mine():" in (root / "tests/test_loop.py").read_text()
    assert (root / "notes.txt").read_text() == f"notes up to lesson {last}\n"
    assert [line for line in git_log(root) if line.startswith("Start lesson")] == [f"Start lesson {n}" for n in range(last, -1, -1)]
    assert subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True).stdout.strip() in ("", "?? notes.txt", "M notes.txt")


def test_next_keeps_a_finished_tool_as_the_student_wrote_it(started):
    root = started(1, solved=True)
    mine = (root / "rover/tools/read.py").read_text() + "\n# written by me, in my own style\n"
    (root / "rover/tools/read.py").write_text(mine)
    moved = next_passing(run)
    assert moved.exit_code == 0, moved.output
    assert (root / "rover/tools/read.py").read_text() == mine
    assert "NotImplementedError" in (root / "rover/tools/bash.py").read_text()


def test_next_refuses_while_the_lesson_fails_unless_forced(started):
    root = started(1)
    refused = run("next")
    assert refused.exit_code == 2 and "failing check" in refused.output and "--force" in refused.output
    assert Workspace.find(root).lesson == 1
    assert run("next", "--force").exit_code == 0
    assert Workspace.find(root).lesson == 2


def test_next_names_conflicting_files_and_the_undo(started):
    root = started(1, solved=True)
    readme = root / "README.md"
    readme.write_text(readme.read_text().replace("# Rover, lesson 1", "# Rover, lesson 1 (my notes)"))
    result = next_passing(run)
    assert result.exit_code == 1
    assert "README.md" in result.output and "git reset --hard && git clean -fd" in result.output
    subprocess.run("git reset -q --hard && git clean -qfd", shell=True, cwd=root, check=True)
    assert Workspace.find(root).lesson == 1 and "(my notes)" in readme.read_text()


def test_next_at_the_last_lesson_says_so(started):
    started(len(kit.lessons()) - 1, solved=True)
    result = run("next")
    assert result.exit_code == 2 and "last lesson" in result.output


def test_status_shows_done_current_and_to_come(started):
    started(1)
    output = run("status").output
    loop, read = len(kit.lesson(0).checks), len(kit.lesson(1).checks)
    assert "✓ done" in output and f"{loop}/{loop}" in output
    assert "▶ lesson-1" in output and f"0/{read}" in output and "to come" in output


def test_hints_come_one_level_at_a_time(started):
    started(1)
    first, second, third = (words(run("hint").output) for _ in range(3))
    numbered = kit.lesson(1).checks[0]
    assert first.startswith(f"{numbered.id}:") and f"Hint 1 of {len(numbered.hints)}: {words(numbered.hints[0])}" in first
    assert "fails now: " in first and "again for the next level" in first
    assert f"Hint 2 of 2: {words(numbered.hints[1])}" in second and "Hint 2 of 2" in third
    assert "`workshop solution --force`" in second, "the last level says where to go from there"


def test_a_new_fault_in_the_same_check_starts_the_hints_again(tmp_path):
    from grader.commands.hint import fault_key, next_level

    (tmp_path / ".git").mkdir()
    spy = fault_key("the spy tool was tampered with: the loop sent back 3 result(s) of `touch`")
    cut = fault_key("call 2 was cut off: expected is_error true, got false")
    assert [next_level(tmp_path, "loop.max-tokens", 2, spy) for _ in range(3)] == [1, 2, 2]
    assert next_level(tmp_path, "loop.max-tokens", 2, cut) == 1, "a different fault is not the last one's next level"
    assert next_level(tmp_path, "loop.turn-limit", 2, spy) == 1, "levels are per check"
    assert fault_key("expected 'hi-1234' in /tmp/a/b, got 12") == fault_key("expected 'hi-98' in /tmp/c, got 7"), \
        "the random values a check draws are not a new fault"


def test_hint_text_is_wrapped_at_words(started):
    started(1)
    output = run("hint", "read.numbered", "--level", "2", columns=50).output
    assert max(len(line) for line in output.splitlines()) < 50
    assert words(kit.lesson(1).checks[0].hints[1]) in words(output), "wrapping never splits a word"


def test_a_named_hint_says_whether_the_check_fails_now(started):
    root = started(1)
    assert "fails now:" in run("hint", "read.missing").output
    (root / "rover/tools/read.py").write_bytes(kit.lesson(1).solution.read_bytes())
    assert "passes now" in run("hint", "read.missing").output
    later = run("hint", "edit.diff")
    assert "lesson 3" in later.output and "does not count yet" in words(later.output)


def test_a_named_hint_and_a_level(started):
    started(2)
    assert "Hint 2 of 2" in run("hint", "read.binary", "--level", "2").output
    wrong = run("hint", "bash.timout")
    assert wrong.exit_code == 2 and "did you mean bash.timeout" in wrong.output
    assert run("hint", "read.binary", "--level", "9").exit_code == 2


def test_no_hint_needed_when_all_pass(started, monkeypatch):
    started(1, solved=True)
    assert "no hint needed" in run("hint").output
    started(len(kit.lessons()) - 1, solved=True)
    # the last lesson's own checks stand for all 127 (graded in full above for lesson 1, and by check's tests): 3 CPU s, not 13
    monkeypatch.setattr("grader.commands.hint.grade", lambda workspace: grade(workspace, only=workspace.lesson))
    last = run("hint").output
    assert "no hint needed" in last and "workshop next" not in last, "there is no next at the last lesson"


def test_lesson_text_in_and_out_of_a_workspace(started, tmp_path, monkeypatch):
    started(2)
    assert "Lesson 2: bash" in run("lesson").output
    assert "Lesson 0: the agent loop" in run("lesson", "0").output
    assert run("lesson", "lesson-42").exit_code == 2
    monkeypatch.chdir(tmp_path)
    outside = run("lesson")
    assert outside.exit_code == 2 and "workshop lesson 0" in outside.output


def test_watch_grades_again_after_a_save(started, capsys, monkeypatch):
    import grader.commands.watch as watching

    root = started(1)
    saved = threading.Event()

    def clear(console) -> None:  # the student saves once the first screen is up (a timer could fire before the first look)
        if not saved.is_set():
            saved.set()
            (root / "rover/tools/read.py").write_text(kit.lesson(1).solution.read_text())
        console.print("<clear>")

    monkeypatch.setattr(watching, "_clear", clear)
    watching.watch(Workspace.find(root), interval=0.1, rounds=2)
    output = capsys.readouterr().out
    screens = output.split("<clear>")[1:]  # each screen opens with the line that names its run
    ones = [screen for screen in screens if screen.lstrip().startswith("── run 1 · ")]
    twos = [screen for screen in screens if screen.lstrip().startswith("── run 2 · ")]
    assert len(ones) == len(twos) == 2 and "rover/tools/read.py saved" in twos[0].splitlines()[1], screens
    # the old screen stays until the new grade is in: the "grading" line comes after it, before the screen is cleared
    assert "grading lesson 1…" in ones[-1].split("Next: ")[-1]
    current_first, with_earlier = twos
    zero, one = len(kit.lesson(0).checks), len(kit.lesson(1).checks)
    assert "lesson 0: checking…" in current_first and f"All {one} checks of lesson 1 pass" in current_first
    assert f"lesson 0: {zero}/{zero} ✓" in with_earlier and f"All {zero + one} checks pass" in with_earlier
    assert "hint: " in ones[0], "the first screen has the failure's hint"
    for screen in screens:
        closing = screen.split("grading lesson")[0].rstrip().splitlines()
        footer = max(index for index, line in enumerate(closing) if line.startswith("Run "))
        assert "graded at" in closing[footer] and "Watching rover/ for saves" in " ".join(closing[footer:footer + 2])
        assert any(line.startswith(("Next: ", "All ")) for line in closing[-2:]), "the next step is the last thing on screen"
        assert len(closing) - footer <= 5, "only the count and the next step come after the run's time"


def test_ctrl_c_stops_watch_at_once_and_leaves_nothing_behind(started, tmp_path):
    import signal

    root = started(1)
    read = root / "rover/tools/read.py"
    read.write_text(read.read_text().replace("def run(", "def run(*args, **kwargs):\n    while True:\n        pass\n\n\ndef _run(", 1))
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    tag = f"WORKSHOP_TEST_WATCH_{os.getpid()}_{time.monotonic_ns()}"  # WORKSHOP_TEST_*: passed into the sandbox
    watcher = subprocess.Popen([sys.executable, "-m", "grader.cli", "watch"], cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env={**os.environ, "TMPDIR": str(scratch), tag: "1"})

    def workers() -> list[str]:
        """The grader's processes below the watch: they carry the run's mark and the test's tag in their environment."""
        found = []
        for entry in filter(str.isdigit, os.listdir("/proc")):
            try:
                environ = Path(f"/proc/{entry}/environ").read_bytes()
                state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if tag.encode() in environ and b"WORKSHOP_RUN=" in environ and state not in "ZX":
                found.append(entry)
        return found

    deadline = time.monotonic() + 30
    while len(workers()) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert workers(), "the grade should be running, stuck in the endless loop"
    stopped = time.monotonic()
    watcher.send_signal(signal.SIGINT)
    time.sleep(0.05)
    watcher.send_signal(signal.SIGINT)  # impatient: a second Ctrl-C
    out, err = watcher.communicate(timeout=10)
    # at once, not when the endless check runs out of its 10 CPU seconds; the margin is for a busy machine's wall clock
    assert time.monotonic() - stopped < 6, "Ctrl-C stops at once, not when the checks time out (10 CPU seconds each)"
    assert watcher.returncode == 130 and "Stopped watching." in out
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    time.sleep(0.3)
    assert workers() == [], "no worker outlives the watch"
    assert list(scratch.iterdir()) == [], "no scratch files are left behind"


def test_reset_stash_and_a_tool_keep_the_old_version_in_git(started):
    root = started(2, solved=True)
    (root / "stash/stash/extract.py").write_text("broken\n")
    assert run("reset", "stash").exit_code == 0
    assert (root / "stash/stash/extract.py").read_bytes() == (kit.root() / "stash/stash/extract.py").read_bytes()
    (root / "rover/tools/bash.py").write_text("# my attempt\n")
    asked = run("reset", "bash")
    assert asked.exit_code == 1 and "--yes" in asked.output, "no terminal to ask in is a no, not an error"
    assert (root / "rover/tools/bash.py").read_text() == "# my attempt\n", "without a yes, nothing changes"
    assert run("reset", "bash", "--yes").exit_code == 0
    assert "raise NotImplementedError" in (root / "rover/tools/bash.py").read_text(), "the current lesson's tool goes back to its stub"
    saved = subprocess.run(["git", "show", "HEAD~1:rover/tools/bash.py"], cwd=root, capture_output=True, text=True).stdout
    assert saved == "# my attempt\n"
    assert run("reset", "read", "--yes").exit_code == 0
    assert (root / "rover/tools/read.py").read_bytes() == kit.lesson(1).solution.read_bytes(), "an earlier tool goes back to solved"


def test_reset_stash_leaves_the_students_tool_code_uncommitted(started):
    root = started(2)
    (root / "rover/tools/bash.py").write_text("# half done\n")
    (root / "stash/stash/extract.py").write_text("changed by Rover\n")
    assert run("reset", "stash").exit_code == 0
    assert subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True).stdout == " M rover/tools/bash.py\n"
    touched = subprocess.run(["git", "log", "--name-only", "--format=", "-2"], cwd=root, capture_output=True, text=True).stdout.split()
    assert touched == ["stash/stash/extract.py"] * 2, "only stash goes into the reset's commits"


def test_answering_no_to_a_reset_is_not_an_error(started, monkeypatch):
    import grader.commands.reset

    root = started(1)
    (root / "rover/tools/read.py").write_text("# mine\n")
    monkeypatch.setattr(grader.commands.reset, "can_ask", lambda: True)
    declined = run("reset", "read", input="n\n")
    assert declined.exit_code == 1 and "Nothing reset" in declined.output
    assert (root / "rover/tools/read.py").read_text() == "# mine\n"
    agreed = run("reset", "read", input="y\n")
    assert agreed.exit_code == 0 and "Rendering rover/tools/read.py" in agreed.stderr, "a slow step says what it is doing"
    assert "NotImplementedError" in (root / "rover/tools/read.py").read_text()


def test_reset_refuses_bad_input(started):
    started(1)
    assert run("reset", "teleport", "--yes").exit_code == 2
    assert run("reset").exit_code == 2
    later = run("reset", "edit", "--yes")
    assert later.exit_code == 2 and "no tool 'edit' in lesson-1" in later.output


def test_reset_all(started):
    root = started(1)
    (root / "rover/tools/read.py").write_text("# attempt\n")
    (root / "rover/model.py").write_text("# broken\n")
    (root / "stash/stash/feeds.py").write_text("# changed\n")
    assert run("reset", "--all", "--yes").exit_code == 0
    fresh = {path: (kit.root() / "stash" / path).read_bytes() for path in ("stash/feeds.py",)}
    assert (root / "stash/stash/feeds.py").read_bytes() == fresh["stash/feeds.py"]
    assert "NotImplementedError" in (root / "rover/tools/read.py").read_text()
    assert (root / "rover/model.py").read_text().startswith('"""The model side of the loop')


def test_solution_opens_after_passing_or_with_force(started):
    root = started(1)
    refused = run("solution")
    assert refused.exit_code == 2 and "--force" in refused.output
    assert "def _read_from" in run("solution", "--force").output
    (root / "rover/tools/read.py").write_bytes(kit.lesson(1).solution.read_bytes())
    assert "def _read_from" in run("solution").output


def test_demo_replays_through_the_students_tools_without_touching_stash(started):
    root = started(3, solved=True)
    before = (root / "stash/stash/extract.py").read_bytes()
    workshop = shutil.which("workshop", path=os.path.dirname(sys.executable)) or "workshop"  # the console script, venv active or not
    demo = subprocess.run([workshop, "demo"], cwd=root, capture_output=True, text=True, timeout=120)
    assert demo.returncode == 0, demo.stderr
    assert "• Read stash/extract.py (22 lines)" in demo.stdout and "• Edit stash/extract.py" in demo.stdout
    assert "1 failed, 1 passed" in demo.stdout
    assert '       """Read a feed\'s date' in demo.stdout, "the diff keeps its context lines"
    assert "tokens: " not in demo.stdout and "tokens over 4 replies" in demo.stdout, "one token total, for a projector"
    assert (root / "stash/stash/extract.py").read_bytes() == before


def test_demo_of_a_later_lesson_is_refused(started):
    started(1)
    result = run("demo", "lesson-3")
    assert result.exit_code == 2 and "lesson-1" in result.output


def test_hint_memory_lives_in_git_dir(started):
    root = started(1)
    run("hint")
    remembered = json.loads((root / ".git/workshop-hints.json").read_text())
    assert list(remembered) == [kit.lesson(1).checks[0].id] and remembered[kit.lesson(1).checks[0].id]["level"] == 1


def test_next_after_the_cache_was_cleared(started):
    from grader.course.template_repo import location

    root = started(1, solved=True)
    (root / "rover/tools/read.py").write_text((root / "rover/tools/read.py").read_text() + "# mine\n")
    shutil.rmtree(location())  # the user's cache was wiped: the cache made again has the same commits
    result = next_passing(run)
    assert result.exit_code == 0, result.output
    assert "into a copy of your workspace" in result.stderr, "the slow step said what it was doing"
    assert Workspace.find(root).lesson == 2 and "# mine" in (root / "rover/tools/read.py").read_text()
    assert subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True).stdout == ""


def test_an_answers_file_with_an_unknown_lesson_is_one_line(started):
    root = started(0)
    answers = root / ".copier-answers.yml"
    answers.write_text(answers.read_text().replace("lesson: 0", "lesson: 42"))
    result = run("check")
    assert result.exit_code == 2 and result.output.count("\n") == 1 and "names no lesson" in result.output


def test_reset_stash_removes_the_students_added_files_says_so_and_keeps_them_in_git(started):
    root = started(4)
    (root / "stash/tests/test_mine.py").write_text("def test_mine():\n    assert True\n")
    (root / "stash/stash/notes").mkdir()
    (root / "stash/stash/notes/todo.txt").write_text("later\n")
    (root / "rover/tools/write.py").write_text("# half done\n")
    reset = run("reset", "stash")
    assert reset.exit_code == 0, reset.output
    assert all(len(line) <= 80 for line in reset.output.splitlines() if not line.startswith("  git ")), "prose wraps; the command is whole"
    assert not (root / "stash/tests/test_mine.py").exists() and not (root / "stash/stash/notes").exists()
    assert words(reset.output).count("stash/tests/test_mine.py") == 2 and "stash/stash/notes/todo.txt" in reset.output, reset.output
    assert subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True).stdout == " M rover/tools/write.py\n"
    back = next(line.strip() for line in reset.output.splitlines() if line.strip().startswith("git checkout"))
    subprocess.run(back, shell=True, cwd=root, check=True)
    assert (root / "stash/tests/test_mine.py").read_text().startswith("def test_mine"), "the command it names brings them back"
    assert (root / "stash/stash/notes/todo.txt").read_text() == "later\n"


def test_reset_stash_with_nothing_added_names_nothing(started):
    root = started(2)
    (root / "stash/stash/extract.py").write_text("changed by Rover\n")
    reset = run("reset", "stash")
    assert reset.exit_code == 0 and "Removed" not in reset.output and "git checkout" not in reset.output


def test_demo_before_the_tool_is_written_names_it_and_the_demo_that_runs_now(started):
    from tests.terminal import in_terminal, too_long

    root = started(2)
    workshop = str(Path(sys.executable).with_name("workshop"))
    status, screen = in_terminal([workshop, "demo"], root, columns=80)
    assert status == 1, screen
    assert not too_long(screen, 80), too_long(screen, 80)
    said = words(screen[screen.index("workshop: lesson 2's demo"):])
    assert said.startswith("workshop: lesson 2's demo stopped where Rover called the bash tool, which is not written yet "
                           "(rover/tools/bash.py, lesson 2)"), said
    assert "`workshop demo lesson-1`" in screen, "the command is on one line, whole"
    assert "your tools answer differently" not in screen


def test_a_check_during_a_conflict_from_next_says_how_to_finish_or_undo_it(started):
    from tests.terminal import in_terminal, too_long

    root = started(1, solved=True)
    registry = root / "rover/tools/__init__.py"
    registry.write_text(registry.read_text().replace("from rover.tools import ls, read\n", "from rover.tools import ls, read  # mine\n"))
    workshop = str(Path(sys.executable).with_name("workshop"))
    status, moved = in_terminal([workshop, "next", "--force"], root)
    assert status == 1 and "rover/tools/__init__.py" in moved, moved
    text = registry.read_text()
    assert "<<<<<<< yours\nfrom rover.tools import ls, read  # mine\n=======\n" in text and "\n>>>>>>> lesson 2\n" in text
    status, checked = in_terminal([workshop, "check"], root)
    assert status == 1 and not too_long(checked, 80), checked
    said = words(checked)
    assert "An unfinished merge, so no check can run" in said and "rover/tools/__init__.py line 13" in said
    assert "`<<<<<<< yours`" in checked and "`>>>>>>> lesson 2`" in checked
    assert "SyntaxError" not in checked and "python -c" not in checked
    assert '`git add -A && git commit -m "Resolve"`' in checked and "`git reset --hard && git clean -fd`" in checked
    subprocess.run("git reset -q --hard && git clean -qfd", shell=True, cwd=root, check=True)  # the undo it names
    assert Workspace.find(root).lesson == 1 and "# mine" in registry.read_text() and "<<<<<<<" not in registry.read_text()


@pytest.mark.parametrize("typed", ["lesson1", "Lesson_2", "lesson 3"])
def test_a_lesson_typed_without_its_dash_gets_a_did_you_mean(tmp_path, monkeypatch, typed):
    monkeypatch.chdir(tmp_path)
    result = run("start", typed)
    number = typed[-1]
    assert result.exit_code == 2 and f"did you mean lesson-{number}?" in result.output, result.output
    assert list(tmp_path.iterdir()) == [], "nothing was made"
