"""Lesson 1: read, called through the student's registry on files made for each check."""
from __future__ import annotations

from grader.grading.checks import Lab, check, excerpt, expect, tool_results

NOTICE = "[Showing lines {first}-{last} of {total}{cut}. Use offset={next} to continue.]"


def numbered(first: int, lines: list[str]) -> str:
    return "\n".join(f"{number:>6}\t{line}" for number, line in enumerate(lines, first))


@check("read.numbered")
def numbered_lines(lab: Lab) -> None:
    lab.file("poem.txt", "roses are red\n  violets are blue\n\nend\n")
    text = lab.ok("read", path="poem.txt").text
    want = numbered(1, ["roses are red", "  violets are blue", "", "end"])
    expect(text == want, f"expected exactly {excerpt(want)} (a whole short file needs no notice), got {excerpt(text)}")


@check("read.offset-limit")
def offset_limit(lab: Lab) -> None:
    lab.file("ten.txt", "".join(f"line {n}\n" for n in range(1, 11)))
    text = lab.ok("read", path="ten.txt", offset=3, limit=2).text
    body = numbered(3, ["line 3", "line 4"])
    expect(text.startswith(body), f"offset=3, limit=2 should show lines 3 and 4 numbered 3 and 4: {excerpt(body)}, got {excerpt(text)}")
    notice = NOTICE.format(first=3, last=4, total=10, cut="", next=5)
    expect(notice in text, f"lines remain, so the output should end with {notice!r}, got {excerpt(text[-120:])}")
    tail = lab.ok("read", path="ten.txt", offset=9).text
    expect(tail == numbered(9, ["line 9", "line 10"]), f"offset=9 should show lines 9-10 and no notice, got {excerpt(tail)}")


@check("read.line-cap")
def line_cap(lab: Lab) -> None:
    lab.file("long.txt", "".join(f"row {n}\n" for n in range(1, 3001)))
    text = lab.ok("read", path="long.txt").text
    lines = text.split("\n")
    expect(lines[1999:2000] == ["  2000\trow 2000"] and "  2001\t" not in text,
           f"a 3000-line file should come back as lines 1-2000 exactly; last numbered line seen: {excerpt(_last_numbered(text))}")
    notice = NOTICE.format(first=1, last=2000, total=3000, cut="", next=2001)
    expect(text.endswith(notice), f"expected the output to end with {notice!r}, got {excerpt(text[-120:])}")
    more = lab.ok("read", path="long.txt", offset=2001).text
    expect(more.startswith("  2001\trow 2001") and more.endswith("  3000\trow 3000"),
           f"following the notice (offset=2001) should give lines 2001-3000, got {excerpt(more[:60])}...{excerpt(more[-60:])}")


@check("read.byte-cap")
def byte_cap(lab: Lab) -> None:
    row = "x" * 99  # 100 bytes with its newline: 512 lines fill 50 KB exactly
    lab.file("wide.txt", f"{row}\n" * 1000)
    text = lab.ok("read", path="wide.txt").text
    body, _, notice = text.rpartition("\n\n")
    shown = body.split("\n")
    expect(all(line.endswith("\t" + row) for line in shown), "every line shown should be whole: the byte cap must not cut a line in half")
    expect(len(shown) == 512, f"100-byte lines under a 51,200-byte cap: expected 512 lines, got {len(shown)}")
    want = NOTICE.format(first=1, last=512, total=1000, cut=" (50.0KB limit)", next=513)
    expect(notice == want, f"expected the notice {want!r}, got {excerpt(notice)}")


@check("read.long-line")
def long_line(lab: Lab) -> None:
    lab.file("minified.js", "short\n" + "y" * 200_000 + "\nafter\n")
    text = lab.ok("read", path="minified.js", offset=2).text
    expect(len(text.encode()) < 51_200, f"a 200,000-byte line must not come back whole; the output was {len(text.encode()):,} bytes")
    expect("195.3KB" in text or "200000" in text.replace(",", "") or "200,000" in text,
           f"the notice should give the line's size (195.3KB), got {excerpt(text)}")
    expect("bash" in text or "offset=3" in text, f"the notice should say how to get at the line (bash) or past it (offset=3), got {excerpt(text)}")


@check("read.missing")
def missing(lab: Lab) -> None:
    text = lab.error("read", path="docs/nope.md").text
    expect("docs/nope.md" in text and "not found" in text.lower(), f"the error should say docs/nope.md was not found, got {excerpt(text)}")


@check("read.directory")
def directory(lab: Lab) -> None:
    lab.file("pkg/module.py", "x = 1\n")
    text = lab.error("read", path="pkg").text
    expect("directory" in text.lower() and "ls" in text, f"the error should say pkg is a directory and to use ls, got {excerpt(text)}")


@check("read.binary")
def binary(lab: Lab) -> None:
    lab.file("logo.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4)
    text = lab.error("read", path="logo.png").text
    expect("binary" in text.lower() and "logo.png" in text, f"the error should say logo.png is binary, got {excerpt(text)}")


@check("read.past-end")
def past_end(lab: Lab) -> None:
    lab.file("short.txt", "one\ntwo\nthree\n")
    text = lab.error("read", path="short.txt", offset=50).text
    expect("3" in text and "50" in text, f"the error should name the offset (50) and the file's 3 lines, got {excerpt(text)}")
    lab.ok("read", path="short.txt", offset=3)


@check("read.bounded-memory")
def bounded_memory(lab: Lab) -> None:
    lab.file("big.log", ("2026-02-03 INFO request served in 12ms " * 3 + "\n") * 200_000)  # about 24 MB
    result, peak = lab.measure("read", path="big.log")
    expect(not result.is_error, f"reading a big log should work, got {excerpt(result.text)}")
    expect("of 200000" in result.text, f"the notice should count all 200000 lines, got {excerpt(result.text[-120:])}")
    expect(peak < 8_000_000, f"reading the first 50 KB of a 24 MB file used {peak / 1e6:.0f} MB: stream the file, do not load it")


@check("read.stash-scenario")
def stash_scenario(lab: Lab) -> None:
    run = lab.scenario(1)
    read = [str(block.get("content")) for block in tool_results(run.messages) if "\tdef parse_date" in str(block.get("content"))]
    expect(read, "the scenario should read stash/extract.py and see parse_date")
    expect("    22\t" in read[0] and "    23\t" not in read[0] and "[Showing" not in read[0],
           f"stash/extract.py has 22 lines and should come back whole, got {excerpt(read[0][-200:])}")


def _last_numbered(text: str) -> str:
    numbered_lines = [line for line in text.split("\n") if line[:6].strip().isdigit()]
    return numbered_lines[-1] if numbered_lines else "(none)"
