"""Lesson 1: read, called through the student's registry on files made afresh (sizes, names, contents) each run.

The notice format is fixed by SPEC; everything else is judged by facts: which lines came back,
numbered how, and which numbers the notice names. A notice is found at the end of the output
whatever separates it from the lines, and the lines are judged without it; read.line-cap then
asks for the blank line the text puts before it.
"""
from __future__ import annotations

import random
import re

from grader.grading.checks import Lab, check, excerpt, expect, result_text, tool_results
from grader.grading.checks.notices import expect_lines, expect_no_notice, expect_notice, numbered, split_notice
from grader.grading.checks.notices import shown as shown_lines

CAP_LINES, CAP_BYTES = 2000, 51_200
WORDS = "stash feed entry parse date return none value items title link fetch cache error retry".split()
MISSING = re.compile(r"not found|no such|n[o']t exist|does not (seem to )?exist|missing|can(no|')t find|could(n't| not) find|"
                     r"non-?existent|no file|enoent|not there|isn't there", re.IGNORECASE)
DIRECTORY = re.compile(r"directory|folder|\bdir\b", re.IGNORECASE)
BINARY = re.compile(r"binary|not (a |an |utf-8 |plain )?text|non-text|nul\b|null (byte|character)|\\x00|\\0", re.IGNORECASE)
SIZE = re.compile(r"(\d[\d,]*(?:\.\d+)?)\s*(KiB|KB|kB|MiB|MB|bytes|B)?")
WAYS = ("bash", "sed", "cut", "head", "tail", "awk", "grep", "dd ", "python")


def text_lines(rng: random.Random, count: int) -> list[str]:
    lines = []
    for _ in range(count):
        shape = rng.random()
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6)))
        lines.append("" if shape < 0.1 else ("    " * rng.randint(1, 3) + words) if shape < 0.4 else words.replace(" ", "\t", 1))
    return lines


def name(rng: random.Random, suffix: str) -> str:
    return f"{rng.choice(WORDS)}_{rng.randint(10, 999)}{suffix}"


@check("read.numbered")
def numbered_lines(lab: Lab) -> None:
    rng = random.Random()
    lines, path = text_lines(rng, rng.randint(4, 12)), name(rng, ".txt")
    indented, trailing = rng.sample(range(len(lines) - 1), 2)
    lines[indented] = "    " * rng.randint(1, 3) + rng.choice(WORDS)  # indentation is part of the line
    lines[trailing] = (lines[trailing] or rng.choice(WORDS)) + rng.choice([" ", "  ", "\t", " \t"])  # and so is trailing space
    lines[-1] = lines[-1] or "end"
    lab.file(path, "\n".join(lines) + "\n")
    result = lab.ok("read", path=path)
    expect_lines(result, numbered(1, lines), f"{path} ({len(lines)} lines)")
    expect_no_notice(result, f"{path} ({len(lines)} lines)")


@check("read.offset-limit")
def offset_limit(lab: Lab) -> None:
    rng = random.Random()
    total, path = rng.randint(12, 40), name(rng, ".log")
    lab.file(path, "".join(f"line {n}\n" for n in range(1, total + 1)))
    offset, limit = rng.randint(2, total - 6), rng.randint(2, 4)
    result = lab.ok("read", path=path, offset=offset, limit=limit)
    what = f"{path} ({total} lines) with offset={offset}, limit={limit}"
    lines, _ = split_notice(result.text)
    expect(lines[:1] == numbered(offset, [f"line {offset}"]),
           f"{what}: the output should start at line {offset}, numbered {offset} (offset counts from 1); it starts "
           + (excerpt(lines[0], 60) if lines else "with no lines at all"))
    expect(len(lines) <= limit, f"{what}: limit={limit} asks for at most {limit} lines, got {shown_lines(lines)}")
    expect_lines(result, numbered(offset, [f"line {n}" for n in range(offset, offset + limit)]), what)
    expect_notice(result, offset, offset + limit - 1, total, False, what)
    end = lab.ok("read", path=path, offset=total - 1)
    expect_lines(end, numbered(total - 1, [f"line {total - 1}", f"line {total}"]), f"{path} with offset={total - 1}")
    expect_no_notice(end, f"{path} with offset={total - 1}, the last two lines")


@check("read.line-cap")
def line_cap(lab: Lab) -> None:
    rng = random.Random()
    total, path = rng.randint(2100, 4000), name(rng, ".txt")
    lab.file(path, "".join(f"row {n}\n" for n in range(1, total + 1)))
    result = lab.ok("read", path=path)
    expect_lines(result, numbered(1, [f"row {n}" for n in range(1, 2001)]), f"{path} ({total} short lines)")
    expect_notice(result, 1, 2000, total, False, f"{path} ({total} short lines)")
    _, found = split_notice(result.text)
    gap = result.text[: found.start()]
    expect(gap.endswith("\n\n"),
           f"{path}: the notice goes after the last line shown, separated from it by a blank line "
           f"('...row 2000\\n\\n[Showing ...'); got {excerpt(result.text[found.start() - 20:found.start() + 20])}")
    more = lab.ok("read", path=path, offset=2001)
    expect_lines(more, numbered(2001, [f"row {n}" for n in range(2001, total + 1)]), f"{path} read on at offset=2001")
    expect_no_notice(more, f"{path} read on at offset=2001 to its end")


@check("read.limit-over-cap")
def limit_over_cap(lab: Lab) -> None:
    rng = random.Random()
    total, limit, path = rng.randint(2100, 3000), rng.randint(2001, 9000), name(rng, ".txt")
    lab.file(path, "".join(f"entry {n}\n" for n in range(1, total + 1)))
    result = lab.ok("read", path=path, limit=limit)
    what = f"{path} ({total} lines) with limit={limit}: the 2000-line cap still holds"
    expect_lines(result, numbered(1, [f"entry {n}" for n in range(1, 2001)]), what)
    expect_notice(result, 1, 2000, total, False, what)


@check("read.at-the-cap")
def at_the_cap(lab: Lab) -> None:
    rng = random.Random()
    lab.file("lines.txt", "".join(f"item {n}\n" for n in range(1, 2001)))
    result = lab.ok("read", path="lines.txt")
    expect_lines(result, numbered(1, [f"item {n}" for n in range(1, 2001)]), "a file of exactly 2000 lines")
    expect_no_notice(result, "a file of exactly 2000 lines (no line 2001 to point at)")
    width = rng.choice([64, 100, 128, 200])  # bytes per line, newline included: 51,200 / width whole lines
    rows = [f"{n:0{width - 1}d}" for n in range(1, CAP_BYTES // width + 1)]
    lab.file("full.txt", "".join(row + "\n" for row in rows))
    result = lab.ok("read", path="full.txt")
    expect_lines(result, numbered(1, rows), f"a file of exactly 51,200 bytes ({len(rows)} lines of {width} bytes)")
    expect_no_notice(result, "a file of exactly 51,200 bytes fits the cap")
    lab.file("over.txt", "".join(row + "\n" for row in rows) + "x\n")
    result = lab.ok("read", path="over.txt")
    expect_lines(result, numbered(1, rows), "51,200 bytes of whole lines and one more line")
    expect_notice(result, 1, len(rows), len(rows) + 1, True, "one line past 51,200 bytes")


@check("read.byte-cap")
def byte_cap(lab: Lab) -> None:
    rng = random.Random()
    rows = ["x" * rng.randint(60, 300) for _ in range(1000)]
    keep = _fits(row.encode() + b"\n" for row in rows)
    lab.file("wide.txt", "".join(row + "\n" for row in rows))
    result = lab.ok("read", path="wide.txt")
    what = f"1000 lines of 61-301 bytes (newline included), of which the first {keep} fit in 51,200 bytes"
    expect_lines(result, numbered(1, rows[:keep]), what)
    expect_notice(result, 1, keep, 1000, True, what)


@check("read.utf8-bytes")
def utf8_bytes(lab: Lab) -> None:
    rng = random.Random()
    letters = rng.choice(["é", "ü", "ж", "€", "→", "語", "🙂"])
    rows = [f"{n} " + letters * rng.randint(20, 60) for n in range(1, 1201)]
    keep = _fits(row.encode() + b"\n" for row in rows)
    lab.file("accents.txt", "".join(row + "\n" for row in rows))
    result = lab.ok("read", path="accents.txt")
    what = (f"1200 lines of {letters!r} ({len(letters.encode())} bytes each in UTF-8): the cap counts the file's bytes, "
            f"so the first {keep} lines fit")
    expect_lines(result, numbered(1, rows[:keep]), what)
    expect_notice(result, 1, keep, 1200, True, what)


@check("read.no-final-newline")
def no_final_newline(lab: Lab) -> None:
    rng = random.Random()
    lab.file("tiny.txt", "first\nlast, with no newline")
    expect_lines(lab.ok("read", path="tiny.txt"), numbered(1, ["first", "last, with no newline"]), "'first\\nlast, with no newline'")
    total = rng.randint(2100, 2900)
    lab.file("unended.txt", "\n".join(f"n{n}" for n in range(1, total + 1)))
    result = lab.ok("read", path="unended.txt")
    expect_notice(result, 1, 2000, total, False, f"{total} lines, the last without a newline (it is still a line)")
    more = lab.ok("read", path="unended.txt", offset=2001)
    expect_lines(more, numbered(2001, [f"n{n}" for n in range(2001, total + 1)]), f"offset=2001 of {total} lines")


@check("read.not-utf8")
def not_utf8(lab: Lab) -> None:
    rng = random.Random()
    word = rng.choice(WORDS)
    lab.file("latin1.txt", f"caf\xe9 {word}\nna\xefve\n{word} end\n".encode("latin-1"))
    result = lab.ok("read", path="latin1.txt")
    lines, _ = split_notice(result.text)
    expect(len(lines) == 3 and lines[0].startswith("     1\tcaf") and lines[0].endswith(f" {word}") and lines[2] == f"     3\t{word} end",
           f"a Latin-1 file (not valid UTF-8) should still come back as 3 numbered lines, the odd bytes replaced; got {excerpt(result.text)}")
    expect_lines(result, numbered(1, [f"caf\ufffd {word}", "na\ufffdve", f"{word} end"]),
                 "a Latin-1 file: each odd byte becomes U+FFFD (errors='replace'), not dropped or kept")


@check("read.long-line")
def long_line(lab: Lab) -> None:
    rng = random.Random()
    size, number = rng.randint(60_000, 400_000), rng.randint(2, 5)
    lab.file("minified.js", "".join(f"// {n}\n" for n in range(1, number)) + "y" * size + "\nafter\n")
    before = lab.ok("read", path="minified.js")
    what = f"minified.js, whose line {number} alone is {size:,} bytes"
    expect_lines(before, numbered(1, [f"// {n}" for n in range(1, number)]), what + ", read from offset 1")
    expect_notice(before, 1, number - 1, number + 1, True, what + ", read from offset 1")
    text = lab.tool("read", path="minified.js", offset=number).text
    held = max((len(run) for run in re.findall(r"y{200,}", text)), default=0)
    expect(not held, f"line {number} is {size:,} bytes, over the cap on its own: none of it should come back, not even cut "
                     f"to fit; the output held {held:,} bytes of it")
    expect(len(text.encode()) < CAP_BYTES, f"line {number} is {size:,} bytes: it must not come back; the output was {len(text.encode()):,} bytes")
    expect(_mentions_size(text, size),
           f"the answer should give line {number}'s size ({_size(size)} or {size:,} bytes), got {excerpt(text)}")
    expect(any(way in text for way in WAYS + (f"offset={number + 1}",)), f"the answer should say how to see part of line {number} (with bash: sed, cut, head) "
           f"or how to go past it (offset={number + 1}), got {excerpt(text)}")
    past = lab.ok("read", path="minified.js", offset=number + 1)
    what = f"minified.js read from offset={number + 1}, just past its {size:,}-byte line {number} (one line, however many readline pieces)"
    expect_lines(past, numbered(number + 1, ["after"]), what)
    expect_no_notice(past, what)


@check("read.missing")
def missing(lab: Lab) -> None:
    path = f"docs/{name(random.Random(), '.md')}"
    text = lab.error("read", path=path).text
    expect(path in text and MISSING.search(text),
           f"the error should name {path} and say it does not exist (or was not found), got {excerpt(text)}")


@check("read.directory")
def directory(lab: Lab) -> None:
    folder = name(random.Random(), "")
    lab.file(f"{folder}/module.py", "x = 1\n")
    text = lab.error("read", path=folder).text
    expect(folder in text and DIRECTORY.search(text), f"the error should name {folder} and say it is a directory (or folder), got {excerpt(text)}")
    expect(re.search(r"\bls\b", re.sub(r"/\S*", "", text)), f"the error should say that ls lists {folder} (what the model can do "
                                                            f"instead), got {excerpt(text)}")
    missing = lab.error("read", path=folder + "_gone").text
    expect(text.replace(folder, "PATH") != missing.replace(folder + "_gone", "PATH"),
           f"a directory and a missing path got the same error ({excerpt(text)}): expected the directory's error to say it is a directory")


@check("read.binary")
def binary(lab: Lab) -> None:
    path = name(random.Random(), ".png")
    lab.file(path, b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4)
    text = lab.error("read", path=path).text
    expect(path in text and BINARY.search(text), f"the error should name {path} and say it is binary (not text), got {excerpt(text)}")


@check("read.past-end")
def past_end(lab: Lab) -> None:
    rng = random.Random()
    total, path = rng.randint(5, 60), name(rng, ".txt")
    lab.file(path, "".join(f"{n}\n" for n in range(1, total + 1)))
    for offset in (total + 1, total + rng.randint(5, 500)):
        text = lab.error("read", path=path, offset=offset).text
        numbers = set(re.findall(r"\d+", text.replace(path, "")))
        expect(str(offset) in numbers and str(total) in numbers,
               f"offset={offset} on {path} ({total} lines): the error should name the offset {offset} and the {total} lines, got {excerpt(text)}")
    last = lab.ok("read", path=path, offset=total)
    expect_lines(last, numbered(total, [str(total)]), f"offset={total}, the last line of {total}")


@check("read.bounded-memory")
def bounded_memory(lab: Lab) -> None:
    lines = random.Random().randint(190_000, 210_000)
    lab.file("big.log", ("2026-02-03 INFO request served in 12ms " * 3 + "\n") * lines)  # about 24 MB
    result, peak = lab.measure("read", path="big.log")
    expect(not result.is_error, f"reading a big log should work, got {excerpt(result.text)}")
    _, found = split_notice(result.text)
    expect(found and found.group(3) == str(lines), f"the notice should count all {lines} lines, got {excerpt(result.text[-120:])}")
    expect(peak < 8_000_000, f"reading the first 50 KB of a 24 MB file used {peak / 1e6:.0f} MB; expected under 8 MB")


@check("read.stash-scenario")
def stash_scenario(lab: Lab) -> None:
    run = lab.scenario(1)
    read = [result_text(block) for block in tool_results(run.messages) if "\tdef parse_date" in result_text(block)]
    expect(read, "the scenario should read stash/extract.py and see parse_date")
    lines, found = split_notice(read[0])
    expect(lines[-1:] and lines[-1].startswith("    22\t") and not found and "[Showing" not in read[0],
           f"stash/extract.py has 22 lines and should come back whole with no notice; it ended {excerpt(read[0][-200:])}")


def _fits(lines) -> int:
    """How many of these lines (bytes, newline included) fit in the byte cap, whole."""
    used = kept = 0
    for line in lines:
        if used + len(line) > CAP_BYTES:
            break
        used, kept = used + len(line), kept + 1
    return kept


def _mentions_size(text: str, size: int) -> bool:
    """Whether `text` gives `size` in bytes (exactly, newline or not) or in KB/MB (to the digit shown)."""
    for number, unit in SIZE.findall(text):
        value = float(number.replace(",", ""))
        scale = {"KIB": 1024, "KB": 1024, "MIB": 1 << 20, "MB": 1 << 20}.get(unit.upper(), 1)
        if scale == 1 and int(value) in (size, size + 1):
            return True
        if scale > 1 and abs(value * scale - size) <= scale * 10 ** -len(number.partition(".")[2]):  # one unit of the last digit
            return True
    return False


def _size(size: int) -> str:
    return f"{size / 1024:.1f}KB" if size < 1024 * 1024 else f"{size / (1024 * 1024):.1f}MB"
