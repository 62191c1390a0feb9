"""The reference read tool, called directly: the contract of SPEC section 5 in detail."""
from __future__ import annotations

import pytest


@pytest.fixture
def read(solved_rover, tmp_path):
    def call(**args):
        return solved_rover.execute("read", args, tmp_path)

    return call


def test_a_file_without_a_final_newline_and_crlf_lines(read, tmp_path):
    (tmp_path / "win.txt").write_bytes(b"one\r\ntwo\r\nthree")
    assert read(path="win.txt").text == "     1\tone\n     2\ttwo\n     3\tthree"


def test_an_empty_file_says_so(read, tmp_path):
    (tmp_path / "empty.txt").write_text("")
    result = read(path="empty.txt")
    assert not result.is_error and "empty" in result.text


def test_limit_larger_than_the_cap_is_still_capped(read, tmp_path):
    (tmp_path / "n.txt").write_text("x\n" * 2500)
    assert read(path="n.txt", limit=5000).text.endswith("[Showing lines 1-2000 of 2500. Use offset=2001 to continue.]")


def test_a_notice_after_a_limit_counts_every_line(read, tmp_path):
    (tmp_path / "n.txt").write_text("x\n" * 30)
    assert read(path="n.txt", limit=10).text.endswith("\n\n[Showing lines 1-10 of 30. Use offset=11 to continue.]")


def test_reading_on_at_the_notice_reaches_a_long_line_and_describes_it(read, tmp_path):
    (tmp_path / "mixed.txt").write_text("a\n" + "b" * 60_000 + "\nc\n")
    first = read(path="mixed.txt").text
    assert first.endswith("[Showing lines 1-1 of 3 (50.0KB limit). Use offset=2 to continue.]")
    second = read(path="mixed.txt", offset=2).text
    assert "58.6KB" in second and "offset=3" in second and "bbbb" not in second


def test_non_utf8_bytes_do_not_crash(read, tmp_path):
    (tmp_path / "latin.txt").write_bytes("café\n".encode("latin-1"))
    result = read(path="latin.txt")
    assert not result.is_error and result.text.startswith("     1\tcaf")


def test_bad_arguments_are_errors_that_show_the_schema(read):
    result = read(path=3)
    assert result.is_error and "path should be string" in result.text and "path: string" in result.text
    result = read(path="a.txt", offset=0)
    assert result.is_error and "at least 1" in result.text
    result = read(file="a.txt")
    assert result.is_error and "missing required path" in result.text and "unknown argument file" in result.text


def test_the_description_quotes_the_caps(solved_rover):
    [schema] = [tool for tool in solved_rover.schemas() if tool["name"] == "read"]
    assert "2000 lines" in schema["description"] and "50.0KB" in schema["description"]


def test_a_file_exactly_at_either_cap_comes_back_whole(read, tmp_path):
    (tmp_path / "lines.txt").write_text("x\n" * 2000)
    assert "[Showing" not in read(path="lines.txt").text
    (tmp_path / "bytes.txt").write_text(("y" * 99 + "\n") * 512)  # 51,200 bytes
    text = read(path="bytes.txt").text
    assert "[Showing" not in text and text.endswith("   512\t" + "y" * 99)


def test_the_byte_cap_counts_utf8_bytes_of_the_file(read, tmp_path):
    (tmp_path / "e.txt").write_text(("é" * 49 + "\n") * 1000)  # 99 bytes a line
    assert read(path="e.txt").text.endswith("[Showing lines 1-517 of 1000 (50.0KB limit). Use offset=518 to continue.]")


def test_offset_one_past_the_end_is_an_error_with_both_numbers(read, tmp_path):
    (tmp_path / "three.txt").write_text("a\nb\nc\n")
    result = read(path="three.txt", offset=4)
    assert result.is_error and "4" in result.text and "3 lines" in result.text
    (tmp_path / "unended.txt").write_text("a\nb\nc")
    assert read(path="unended.txt", offset=3).text == "     3\tc"
    assert read(path="unended.txt", offset=4).is_error
