"""Lesson 3: edit, on files made fresh (names, sizes, places) for each run, then the parse_date fix on a stash.

Refusals are judged by facts only: is_error, the file left byte for byte, and the numbers the lesson
asks for (the edit's number, counted from 1; the count of matches; the line where a change starts).
"""
from __future__ import annotations

import random
import re
from itertools import permutations
from typing import Any

from grader.grading.checks import CheckFailed, Lab, check, excerpt, expect, result_text, tool_results
from grader.grading.checks.disk import HUNK, DirectoryEvents, apply_diff, count, leftovers, lines_of, numbers

DIRECTORY_WORD = re.compile(r"\b(directory|directories|folder|folders|dir)\b", re.IGNORECASE)
READ_WORD = re.compile(r"\b(re-?)?read", re.IGNORECASE)
NOT_FOUND = re.compile(r"not (be )?found|no match|(cannot|can't|could not|couldn't) (find|locate)|\bmissing\b", re.IGNORECASE)  # a message's words only
ORDINALS = ("zeroth", "first", "second", "third", "fourth", "fifth")
ORDER = ("the earlier of the two", "the later", "a third edit elsewhere")  # the overlap check's pairs, as a message names them


def unchanged(lab: Lab, name: str, before: bytes, why: str) -> None:
    after = lab.files.read_bytes(name)
    expect(after == before, f"{why}, the file must be left exactly as it was: expected {excerpt(before)}, found {excerpt(after)}")
    extra = leftovers(lab.files, name)
    expect(not extra, f"{why}, nothing should be left behind beside {name}, found {extra}")


def edit(lab: Lab, path: str, *pairs: tuple[str, str]):
    return lab.tool("edit", path=path, edits=[{"oldText": old, "newText": new} for old, new in pairs])


def refused(lab: Lab, path: str, *pairs: tuple[str, str], why: str) -> str:
    """The error text of a call that must be refused; `why` names the rule that refuses it, for the message if it succeeds."""
    result = edit(lab, path, *pairs)
    expect(result.is_error, f"{why}: the call should be refused (an is_error result), but it succeeded with {excerpt(result.text)}")
    return result.text


def names(text: str, number: int) -> bool:
    """The text names edit `number`: as a number (2, #2, 2nd), or as an ordinal before 'edit' ('the second edit')."""
    ordinal = rf"\b{ORDINALS[number]}\b(?:\W+\w+){{0,2}}?\W+edits?\b"
    return number in numbers(text) or re.search(ordinal, text, re.IGNORECASE) is not None


def names_edit(text: str, number: int, why: str) -> None:
    expect(names(text, number), f"{why}: the error should name edit {number} (edits count from 1), got {excerpt(text)}")


def file_of(lab: Lab, rng: random.Random, count: int, name: str = "") -> tuple[str, list[str], bytes]:
    lines = lines_of(rng, count)
    name = name or f"{rng.choice(lines).split(' ')[0]}.py"
    return name, lines, lab.files.read_bytes(lab.file(name, "".join(line + "\n" for line in lines)))


@check("edit.replace")
def replace(lab: Lab) -> None:
    rng = random.Random()
    name, lines, before = file_of(lab, rng, rng.randint(4, 12))
    target = rng.choice(lines)
    result = edit(lab, name, (target, target.upper()))
    expect(not result.is_error, f"a unique match should be replaced, got the error {excerpt(result.text)}")
    expected = before.decode().replace(target, target.upper())
    after = lab.files.read_text(name)
    expect(after == expected, f"only the matched text should change: expected {excerpt(expected)}, found {excerpt(after)}")
    a, b, c = rng.sample(lines, 3)
    call = f"{a.split(' ')[0]}.get(*args) + [kwargs]"  # exact text, even where a regular expression would see patterns
    before = lab.files.read_bytes(lab.file(name, f"{b}\nvalue = {call}\n{c}\n"))
    result = edit(lab, name, (f"= {call}", r"= \g<0>.strip('$\\')"))
    expect(not result.is_error, f"oldText {call!r} occurs once, as plain text: it should be replaced, got the error {excerpt(result.text)}")
    expected = before.decode().replace(f"= {call}", r"= \g<0>.strip('$\\')")
    after = lab.files.read_text(name)
    expect(after == expected, f"only the matched text should change: expected {excerpt(expected)}, found {excerpt(after)}")


def two_edits_with_context(lab: Lab, rng: random.Random) -> tuple[str, bytes, int, Any]:
    """Two valid edits sent out of file order; the earlier one's oldText opens with an unchanged line (context, as the
    lesson recommends), so its change starts one line on. (file name, its bytes before, the first changed line, result)"""
    name, lines, before = file_of(lab, rng, rng.randint(45, 70))
    first, second = rng.randint(20, 28), rng.randint(34, 42)
    context = f"{lines[first - 2]}\n"
    result = edit(lab, name, (lines[second - 1], lines[second - 1] + "  # tuned"),
                  (context + lines[first - 1], f"{context}# {lines[first - 1]}"))
    expect(not result.is_error, f"two valid edits should apply, got the error {excerpt(result.text)}")
    return name, before, first, result


@check("edit.diff")
def diff(lab: Lab) -> None:
    rng = random.Random()
    name, before, _, result = two_edits_with_context(lab, rng)
    after = lab.files.read_text(name)
    patched = apply_diff(result.text, before.decode())
    expect(patched == after, f"applying the diff to the file as it was should give the file as it is now; it gives {excerpt(patched)}")
    last = lines_of(rng, 6)
    lab.file("tail.py", "\n".join(last))  # no newline after the last line
    result = edit(lab, "tail.py", (last[-1], last[-1].upper()))
    expect(not result.is_error, f"an edit of the last line should apply, got the error {excerpt(result.text)}")
    patched = apply_diff(result.text, "\n".join(last))
    after = lab.files.read_text("tail.py")
    expect(patched != after + "\n", "the new last line has no newline either: the diff's '+' line for it should be followed by "
                                    "'\\ No newline at end of file'")
    expect(patched == after, f"applying the diff to tail.py as it was should give it as it is now; it gives {excerpt(patched)}")


@check("edit.first-line")
def first_line(lab: Lab) -> None:
    _, _, first, result = two_edits_with_context(lab, random.Random())
    said = numbers("\n".join(row for row in result.text.split("\n") if not HUNK.match(row)))
    expect(first in said or first - 1 not in said,
           f"the first change starts at line {first}: the earlier edit's oldText starts at line {first - 1}, but that line is "
           f"unchanged context (newText starts with it too); the answer says {sorted(said)}")
    expect(first in said, f"besides the diff, the answer should say the first change starts at line {first}; "
                          f"the numbers it gives are {sorted(said) or 'none'}")


@check("edit.not-found")
def not_found(lab: Lab) -> None:
    rng = random.Random()
    name, lines, before = file_of(lab, rng, 8)
    first, second, third = rng.sample(lines, 3)
    text = refused(lab, name, (first.replace(" = ", "  = "), "x = None"), why=f"oldText {first.replace(' = ', '  = ')!r} is not in {name}")
    unchanged(lab, name, before, "when oldText is not found")
    expect(READ_WORD.search(text), f"the error should tell the model to read the file again and copy the text from it, got {excerpt(text)}")
    for missing in (1, 2, 3):  # every place: a count from 0 names edit 3 as "2 of 3", which holds a 3 all the same
        pairs = [(second, second + "  # kept"), (third, third + "  # kept")]
        pairs.insert(missing - 1, (first.replace("'", '"'), "x = None"))
        text = refused(lab, name, *pairs, why=f"edit {missing} of 3 is not in {name}")
        names_edit(text, missing, f"edit {missing} of 3 is not in the file")
        unchanged(lab, name, before, "when one of three edits is not found")
    result = edit(lab, name, (first, "x = None"))
    expect(not result.is_error, f"the same edit copied exactly from the file should apply, got the error {excerpt(result.text)}")


@check("edit.multiple-matches")
def multiple_matches(lab: Lab) -> None:
    rng = random.Random()
    lines, twice = lines_of(rng, 12), rng.randint(2, 6)
    repeated = lines[0]
    body = lines[1:] + [repeated] * twice
    rng.shuffle(body)
    body.append(lines[0] + "  # last")  # the repeated line is also a prefix of this one: twice + 1 matches
    before = lab.files.read_bytes(lab.file("render.py", "".join(line + "\n" for line in body)))
    text = refused(lab, "render.py", (repeated, "pass"), why=f"oldText occurs {twice + 1} times in render.py")
    expect(twice + 1 in numbers(text), f"oldText occurs {twice + 1} times: the error should say {twice + 1}, got {excerpt(text)}")
    unchanged(lab, "render.py", before, "when oldText matches several places")
    marks = rng.randint(3, 6)
    before = lab.files.read_bytes(lab.file("render.py", f"{lines[1]}\n" + "#\n" * marks + f"{lines[2]}\n"))
    text = refused(lab, "render.py", ("#\n#\n", "#\n"), why=f"'#\\n#\\n' occurs {marks - 1} times in render.py, overlapping ones counted")
    expect(marks - 1 in numbers(text), f"'#\\n#\\n' occurs {marks - 1} times in {marks} lines of '#', overlapping ones counted "
                                        f"(str.count skips those): the error should say {marks - 1}, got {excerpt(text)}")
    unchanged(lab, "render.py", before, "when oldText matches several overlapping places")
    result = edit(lab, "render.py", (f"{lines[1]}\n#\n", f"{lines[1]}\n"))
    expect(not result.is_error, f"with a neighbouring line in oldText the match is unique and the edit should apply, got {excerpt(result.text)}")


@check("edit.overlap")
def overlap(lab: Lab) -> None:
    rng = random.Random()
    cuts: list[int] = []
    while not cuts:  # about one file in 500 has no such cut in its third line (its pieces recur): draw another
        lines = lines_of(rng, 5)
        text = "".join(line + "\n" for line in lines)
        cuts = [n for n in range(3, len(lines[2]) - 3) if count(text, lines[2][:n]) == count(text, lines[2][n:]) == 1]
    name = f"{lines[0].split(' ')[0]}.py"
    before = lab.files.read_bytes(lab.file(name, text))
    line, other, text, cut = lines[2], lines[4], before.decode(), rng.choice(cuts)
    for first, second, kind in ((line[:cut + 1], line[cut:], "share one character"), (line, line[1:-1], "nest one in the other")):
        pairs = [(first, "a = None"), (second, "b = None"), (other, other + "  # kept")]
        for order in permutations(range(3)):  # every order: a check of neighbours only, or of one direction, misses some
            result = edit(lab, name, *(pairs[n] for n in order))
            numbered = [order.index(0) + 1, order.index(1) + 1]
            what = f"edits {numbered[0]} and {numbered[1]} {kind} (sent in the order {', '.join(ORDER[n] for n in order)})"
            expect(result.is_error, f"{what}: the call should be refused, but it applied: {excerpt(result.text)}")
            both = all(names(result.text, n) or old[:40] in result.text for n, old in zip(numbered, (first, second)))
            expect(both or not NOT_FOUND.search(result.text),
                   f"{what}: the error says an oldText was not found, got {excerpt(result.text)}; both are in the file as it was, so "
                   f"the edits were matched one after another: locate every edit in the original file first, then compare their places")
            expect(both or not all(names(result.text, n - 1) for n in numbered),
                   f"{what}: the error names edits {numbered[0] - 1} and {numbered[1] - 1}, got {excerpt(result.text)}; edits count from 1")
            expect(both, f"{what}: the error should name both (by number, or by their text), got {excerpt(result.text)}")
            unchanged(lab, name, before, f"when two edits {kind}")
    for pairs in ([(line[cut:], "B"), (line[:cut], "A")], [(line[:cut], "A"), (line[cut:], "B")]):
        lab.file(name, before)
        result = edit(lab, name, *pairs)
        expect(not result.is_error, f"edits that only touch (one ends where the next starts) do not overlap and should apply, "
                                    f"in either order; got {excerpt(result.text)}")
        expected = before.decode().replace(line, "AB")
        after = lab.files.read_text(name)
        expect(after == expected, f"both touching edits should apply: expected {excerpt(expected)}, found {excerpt(after)}")


@check("edit.all-or-nothing")
def all_or_nothing(lab: Lab) -> None:
    rng = random.Random()
    name, lines, before = file_of(lab, rng, 6)
    refused(lab, name, (lines[1], "a = None"), ("timeout = 10", "timeout = 30"), why=f"edit 2's oldText 'timeout = 10' is not in {name}")
    unchanged(lab, name, before, "when the second of two edits fails (its text is not in the file), the first must not apply either")
    lab.ok("edit", path=name, edits=[{"oldText": lines[1], "newText": "a = None"}, {"oldText": lines[4], "newText": "b = None"}])
    expected = before.decode().replace(lines[1], "a = None").replace(lines[4], "b = None")
    after = lab.files.read_text(name)
    expect(after == expected, f"with both edits valid, both should apply: expected {excerpt(expected)}, found {excerpt(after)}")


@check("edit.original-file")
def original_file(lab: Lab) -> None:
    rng = random.Random()
    name, lines, before = file_of(lab, rng, 6)
    result = edit(lab, name, (lines[4], "late = True"), (lines[0], "early = True"))
    expect(not (result.is_error and names(result.text, 1) and names(result.text, 2)),
           f"edit 1 (line 5) and edit 2 (line 1) are lines apart and do not overlap, yet the call was refused naming both: "
           f"{excerpt(result.text)}; edits come in any order, so compare them in the file's order (sorted by where they start)")
    expect(not result.is_error, f"two separate edits, given in any order, should both apply, got {excerpt(result.text)}")
    expected = before.decode().replace(lines[4], "late = True").replace(lines[0], "early = True")
    after = lab.files.read_text(name)
    expect(after == expected, f"both edits should apply: expected {excerpt(expected)}, found {excerpt(after)}")
    lab.file("chain.py", "value = 'one'\n")
    result = edit(lab, "chain.py", ("'one'", "'two'"), ("'two'", "'three'"))
    after = lab.files.read_text("chain.py")
    expect(result.is_error, "edits match the original file, not the result of earlier edits: edit 2's oldText 'two' is only there "
                            f"after edit 1 applies, so the call should be refused; it succeeded, leaving {after!r}")
    expect(after != "value = 'two'\n", "edit 2 ('two') is not in the original file and the call was refused, yet edit 1 was written: "
                                       "check every edit before writing anything, then write once (all or nothing)")
    expect(after == "value = 'one'\n", f"a refused call leaves the file as it was: expected \"value = 'one'\\n\", found {after!r}")


@check("edit.refuse-empty-and-noop")
def refuse_empty_and_noop(lab: Lab) -> None:
    rng = random.Random()
    name, lines, before = file_of(lab, rng, 6)
    result = edit(lab, name, (lines[3], lines[3] + "  # ok"))
    expect(not result.is_error, f"a real edit should apply, got the error {excerpt(result.text)}")
    before = lab.files.read_bytes(name)
    refused(lab, name, ("", "x = None\n"), why="an empty oldText matches everywhere and is refused")
    unchanged(lab, name, before, "after an edit with an empty oldText")
    for bad, kind in (((lines[1], lines[1]), "changes nothing (newText equals oldText)"), (("", "x = None\n"), "has an empty oldText")):
        for number in (1, 2, 3):  # every place, so a count from 0 is caught whatever else the message says
            pairs = [(lines[0], "a = None"), (lines[2], "b = None")]
            pairs.insert(number - 1, bad)
            why = f"edit {number} of 3 {kind}, beside real edits: it is refused on its own, and with it the whole call"
            text = refused(lab, name, *pairs, why=why)
            names_edit(text, number, why)
            unchanged(lab, name, before, f"when edit {number} {kind}")
    lab.file("empty.py", "")
    refused(lab, "empty.py", ("", "x = None\n"),  # "" is all an empty file holds: still empty, still refused
            why="an empty oldText is refused in an empty file too (the file holds nothing to match)")
    found = lab.files.read_bytes("empty.py")
    expect(found == b"", f"an empty oldText is refused in an empty file too: the file must stay empty, found {excerpt(found)}")


@check("edit.crlf-bom")
def crlf_bom(lab: Lab) -> None:
    rng = random.Random()
    lines = lines_of(rng, 5)
    windows = "\ufeff" + "".join(line + "\r\n" for line in lines)
    lab.file("win.py", windows)
    result = edit(lab, "win.py", (f"{lines[1]}\n{lines[2]}", "a = None\nb = None"))
    expect(not result.is_error, f"an LF oldText should match a CRLF file, got {excerpt(result.text)}")
    expected = windows.replace(f"{lines[1]}\r\n{lines[2]}", "a = None\r\nb = None").encode()
    after = lab.files.read_bytes("win.py")
    expect(after == expected, f"the BOM and CRLF line endings should survive the edit: expected {expected!r}, found {after!r}")
    try:  # the kind of diff patch could apply to this very file: its lines end in \r\n (a BOM in the diff or not, either way)
        patched = apply_diff(result.text.replace("\ufeff", ""), windows[1:])
    except CheckFailed as failure:
        raise CheckFailed(f"the diff should be one patch can apply to the file itself, whose lines end in \\r\\n: diff the file's own "
                          f"lines, \\r included, not the LF copy you matched on ({failure})") from None
    expect(patched == expected.decode()[1:], f"applying the diff to win.py as it was should give it as it is now; it gives {patched!r}")
    lines = lines_of(rng, 8)
    endings = ["\r\n", "\n"] + [rng.choice(["\r\n", "\n"]) for _ in lines[2:]]
    rng.shuffle(endings)
    one, two = rng.sample(range(1, 7), 2)
    endings[two] = "\n" if endings[0] == "\r\n" else "\r\n"  # the line the edit starts on ends unlike the first line
    mixed = "".join(line + end for line, end in zip(lines, endings))
    lab.file("mixed.py", mixed.encode())
    edit(lab, "mixed.py", (lines[one], "a = None"))
    expected = mixed.replace(lines[one], "a = None").encode()
    after = lab.files.read_bytes("mixed.py")
    expect(after == expected, f"in a file that mixes LF and CRLF, lines the edit does not touch keep their own endings: "
                              f"expected {expected!r}, found {after!r}")
    lines[one] = "a = None"
    result = edit(lab, "mixed.py", (f"{lines[two]}\n{lines[two + 1]}", "b = None\nc = None"))
    expect(not result.is_error, f"an LF oldText across two lines should match them whatever their endings, got {excerpt(result.text)}")
    after = lab.files.read_bytes("mixed.py")
    rows = after.split(b"\n")
    kept = [n for n in range(len(lines)) if n not in (two, two + 1)]
    expect(len(rows) == len(lines) + 1 and all(rows[n] + b"\n" == (lines[n] + endings[n]).encode() for n in kept)
           and [rows[two].rstrip(b"\r"), rows[two + 1].rstrip(b"\r")] == [b"b = None", b"c = None"],
           f"only lines {two + 1}-{two + 2} should change, every other line keeping its bytes and ending; found {excerpt(after)}")
    ending, found = endings[two].encode(), rows[two] + b"\n"
    expect(found == b"b = None" + ending,
           f"a new line takes the ending of the line the edit starts on (line {two + 1}, {ending!r}), not the first line's ({endings[0].encode()!r}): "
           f"found {found!r}")


@check("edit.atomic")
def atomic(lab: Lab) -> None:
    rng = random.Random()
    name, lines, _ = file_of(lab, rng, 4)
    mode = rng.choice([0o755, 0o750, 0o700, 0o640, 0o664])
    lab.files.chmod(name, mode)
    inode = lab.files.stat(name).st_ino
    with DirectoryEvents(lab.files) as events:
        result = edit(lab, name, (lines[2], "a = None"))
    expect(not result.is_error and "a = None" in lab.files.read_text(name), f"the edit should apply, got {excerpt(result.text)}")
    expect(lab.files.stat(name).st_ino != inode, "the file kept its inode, so it was rewritten in place: write a temp file and rename it over "
                                        "the original (write_atomic)")
    kept = lab.files.stat(name).st_mode & 0o7777
    expect(kept == mode, f"the file's permissions should be kept: expected {mode:o}, found {kept:o}")
    extra = leftovers(lab.files, name)
    expect(not extra, f"no temporary files should be left behind, found {extra}")
    events.check_temp_beside(name)


@check("edit.read-only")
def read_only(lab: Lab) -> None:
    rng = random.Random()
    name, lines, _ = file_of(lab, rng, 4)
    result = edit(lab, name, (lines[0], "a = None"))
    expect(not result.is_error, f"an edit of a writable file should apply, got the error {excerpt(result.text)}")
    mode = rng.choice([0o444, 0o440, 0o400, 0o555])
    before = lab.files.read_bytes(name)
    lab.files.chmod(name, mode)
    try:
        refused(lab, name, (lines[1], "b = None"), why=f"{name} is read-only (mode {mode:o}, no write bit), so the edit is refused, "
                                                          "as write_atomic refuses it (a rename would replace it: the folder allows that)")
        unchanged(lab, name, before, f"for a read-only file (mode {mode:o})")
        kept = lab.files.stat(name).st_mode & 0o7777
        expect(kept == mode, f"a read-only file keeps its mode {mode:o}, found {kept:o}")
    finally:
        if lab.files.is_file(name):
            lab.files.chmod(name, 0o644)


@check("edit.directory")
def directory(lab: Lab) -> None:
    rng = random.Random()
    name, lines, _ = file_of(lab, rng, 3)
    result = edit(lab, name, (lines[0], "a = None"))
    expect(not result.is_error, f"an edit of a file should apply, got the error {excerpt(result.text)}")
    folder = rng.choice(lines[1:]).split(" ")[0]
    lab.files.mkdir(folder)
    lab.file(f"{folder}/inside.py", "a = 1\n")
    text = refused(lab, folder, ("a = 1", "a = 2"), why=f"{folder} is a directory")
    expect(folder in text and DIRECTORY_WORD.search(text) and "Errno" not in text,
           f"{folder} is a directory: the refusal should name it and say it is a directory (or folder), in words of its own "
           f"rather than a raw OS error; got {excerpt(text)}")
    expect(lab.files.read_text(f"{folder}/inside.py") == "a = 1\n", "the directory and its files must be left alone")


@check("edit.stash-scenario")
def stash_scenario(lab: Lab) -> None:
    run = lab.scenario(3)
    fixed = lab.files.read_text(run.cwd / "stash/extract.py")
    expect('        "%a, %d %b %Y %H:%M:%S %z",\n' in fixed and fixed.count("\n") == 27,
           f"after the scenario, parse_date should list the offset-aware formats first, got {excerpt(fixed[200:520])}")
    runs = [result_text(block) for block in tool_results(run.messages) if "passed" in result_text(block)]
    expect(runs and "1 failed, 1 passed" in runs[-1], "stash's suite should end at '1 failed, 1 passed' after the fix")
