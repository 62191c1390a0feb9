"""The reference bash tool, called directly."""
from __future__ import annotations

import re
from pathlib import Path

import pytest


@pytest.fixture
def bash(solved_rover, tmp_path):
    def call(command: str, **args):
        return solved_rover.execute("bash", {"command": command, **args}, tmp_path)

    return call


def spill_path(text: str) -> Path:
    return Path(re.search(r"Full output: (\S+)\]$", text).group(1))


def test_the_spill_file_holds_every_byte_and_is_removed_when_nothing_was_cut(bash, tmp_path):
    cut = bash("seq 1 3000")
    assert spill_path(cut.text).read_text() == "".join(f"{n}\n" for n in range(1, 3001))
    before = set(Path("/tmp").glob("rover-bash-*.log"))
    bash("echo short")
    assert set(Path("/tmp").glob("rover-bash-*.log")) == before


def test_a_huge_line_is_cut_to_its_tail_and_then_dropped_for_whole_later_lines(bash):
    alone = bash("head -c 200000 /dev/zero | tr '\\0' 'x'")
    assert alone.text.startswith("x" * 1000) and alone.text.endswith("(50.0KB limit). Full output: " + str(spill_path(alone.text)) + "]")
    assert len(alone.text.split("\n\n[")[0]) == 51_200
    followed = bash("head -c 200000 /dev/zero | tr '\\0' 'x'; echo; echo last")
    assert followed.text.startswith("last\n\n[Showing lines 2-2 of 2 (50.0KB limit)")


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
