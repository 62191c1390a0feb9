"""The reference bash tool, called directly."""
from __future__ import annotations

import re
import tempfile
import time
from pathlib import Path

import pytest


@pytest.fixture
def bash(solved_rover, tmp_path):
    def call(command: str, **args):
        return solved_rover.execute("bash", {"command": command, **args}, tmp_path)

    return call


def spill_path(text: str) -> Path:
    return Path(re.search(r"Full output: (\S+)\]$", text).group(1))


def spills() -> set[Path]:
    return set(Path(tempfile.gettempdir()).glob("rover-bash-*.log"))


def test_the_spill_file_holds_every_byte_and_is_removed_when_nothing_was_cut(bash, tmp_path):
    cut = bash("seq 1 3000")
    assert spill_path(cut.text).read_text() == "".join(f"{n}\n" for n in range(1, 3001))
    spill_path(cut.text).unlink()
    before = spills()
    bash("echo short")
    assert spills() == before


def test_a_missing_working_directory_is_an_error_and_leaves_no_spill_file(solved_rover, tmp_path):
    before = spills()
    result = solved_rover.execute("bash", {"command": "echo hi"}, tmp_path / "gone")
    assert result.is_error and str(tmp_path / "gone") in result.text and "does not exist" in result.text
    assert spills() == before


def test_the_timeout_holds_while_output_keeps_flowing(bash):
    took = []
    for _ in range(2):  # wall time on a shared machine: a busy moment may make one try late, never both
        started = time.monotonic()
        result = bash("yes", timeout=1)
        took.append(time.monotonic() - started)
        assert result.is_error and result.text.endswith("Command timed out after 1 seconds")
        spill_path(result.text.rsplit("\n\n", 1)[0]).unlink()
        if took[-1] < 4:
            break
    assert min(took) < 4, f"a 1-second timeout over endless output returned after {took} s"


def test_a_cut_inside_one_long_line_starts_on_a_whole_character(bash):
    result = bash("printf 'a'; for i in $(seq 1 300); do printf '€%.0s' $(seq 1 100); done")
    kept = result.text.split("\n\n[")[0]
    assert "\ufffd" not in kept and set(kept) == {"€"} and len(kept.encode()) == 51_198
    spill_path(result.text).unlink()


def test_undecodable_bytes_come_back_replaced(bash):
    result = bash("printf 'ok \\xff end'")
    assert not result.is_error and result.text == "ok \ufffd end"


def test_a_signal_is_named(bash):
    result = bash("echo going; kill -TERM $$")
    assert result.is_error and result.text == "going\n\nCommand was killed by signal 15 (SIGTERM)"


def test_output_written_just_before_exit_is_drained(bash):
    result = bash("sleep 0.2; printf '%s\\n' $(seq 1 1500); echo last")
    assert result.text.endswith("1500\nlast") and len(result.text.split("\n")) == 1501


def test_it_is_bash_not_sh(bash):
    assert bash("a=(x y z); echo ${a[2]} ${#a[@]} {1..3}").text == "z 3 1 2 3"


def test_a_huge_line_is_cut_to_its_tail_and_then_dropped_for_whole_later_lines(bash):
    alone = bash("head -c 200000 /dev/zero | tr '\\0' 'x'")
    assert alone.text.startswith("x" * 1000) and alone.text.endswith("(50.0KB limit). Full output: " + str(spill_path(alone.text)) + "]")
    assert len(alone.text.split("\n\n[")[0]) == 51_200
    spill_path(alone.text).unlink()
    followed = bash("head -c 200000 /dev/zero | tr '\\0' 'x'; echo; echo last")
    assert followed.text.startswith("last\n\n[Showing lines 2-2 of 2 (50.0KB limit)")
    spill_path(followed.text).unlink()


def test_a_timeout_keeps_the_output_so_far_and_says_so(bash):
    result = bash("for i in 1 2 3; do echo tick $i; done; sleep 10", timeout=1)
    assert result.is_error and result.text.startswith("tick 1\ntick 2\ntick 3")
    assert result.text.endswith("Command timed out after 1 seconds")


def test_stdin_is_closed(bash):
    result = bash("read line || echo 'no input'", timeout=5)
    assert result.text == "no input"


def test_a_timeout_that_is_not_a_number_is_an_argument_error(bash):
    result = bash("true", timeout="soon")
    assert result.is_error and "timeout should be number" in result.text


CLOCK_CHECKS = ("bash.timeout", "bash.timeout-output-closed", "bash.timeout-while-printing", "bash.kills-group")


@pytest.mark.parametrize("floor", ["0.1", "1"])
def test_the_clock_checks_call_within_the_students_own_schema(workspace, floor):
    # the kit's stub says 0.1 and the checks give 0.5 s; a stub from before said 1, and its owner's tool refuses less
    # ("timeout must be at least 1"): graded at 1 s, the same tool passes
    from grader.course import kit
    from grader.grading.runner import run_checks

    root = workspace(2, solved=True)
    tool = root / "rover/tools/bash.py"
    tool.write_text(tool.read_text().replace('"minimum": 0.1,', f'"minimum": {floor},', 1))
    assert f'"minimum": {floor},' in tool.read_text()
    outcomes = run_checks(root, [check for check in kit.lesson(2).checks if check.id in CLOCK_CHECKS])
    assert sorted((outcome.check.id, outcome.status, outcome.message) for outcome in outcomes) == \
           sorted((check, "passed", "") for check in CLOCK_CHECKS)
