"""SPEC's fixed notices, found where they belong (at the end of the output) and taken apart.

A notice is found at the end whatever separates it from the text before (a blank line, one
newline), and the text is judged without it. read ends with a continue notice; bash with a
tail notice and its status lines (exit code, timeout, signal), in any order.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from grader.grading.lab import CheckFailed, Lab, Result, excerpt, expect

READ_NOTICE = re.compile(r"\[Showing lines (\d+)-(\d+) of (\d+)( \(50\.0KB limit\))?\. Use offset=(\d+) to continue\.\]\s*$")
SPILL = r"\[Showing lines (\d+)-(\d+) of (\d+) \((2000-line|50\.0KB) limit\)\. Full output: (.+?)\]"
# the status lines may carry words of their own after the fixed part, on the same line
ENDINGS = [SPILL, r"Command exited with code (-?\d+)(?![\d.]\d)[^\n]*", r"Command timed out after ([\d.]+) seconds?\b[^\n]*",
           r"Command was killed by signal (\d+) \((\w+)\)[^\n]*"]


# --- read: the continue notice ----------------------------------------------------------------

def numbered(first: int, lines: list[str]) -> list[str]:
    return [f"{number:>6}\t{line}" for number, line in enumerate(lines, first)]


def split_notice(text: str) -> tuple[list[str], re.Match | None]:
    """The output's lines, and the continue notice at its end if there is one (without it)."""
    found = READ_NOTICE.search(text)
    body = text[: found.start()] if found else text
    body = body.rstrip("\r\n")
    return (body.split("\n") if body else []), found


def shown(lines: list[str]) -> str:
    """Which line numbers came back, for a failure message."""
    numbers = [int(line[:6]) for line in lines if line[:6].strip().isdigit() and line[6:7] == "\t"]
    if not numbers:
        return f"no numbered lines ({len(lines)} line(s) of output: {excerpt(chr(10).join(lines[:3]), 120)})"
    return f"{len(numbers)} numbered lines, {numbers[0]} to {numbers[-1]}"


def expect_lines(result: Result, want: list[str], what: str) -> None:
    lines, _ = split_notice(result.text)
    if lines == want:
        return
    first_diff = next((index for index, (got, wanted) in enumerate(zip(lines, want)) if got != wanted), min(len(lines), len(want)))
    got = lines[first_diff] if first_diff < len(lines) else "(nothing)"
    wanted = want[first_diff] if first_diff < len(want) else "(nothing)"
    raise CheckFailed(f"{what}: expected {len(want)} lines, got {shown(lines)}; the first difference is at output line "
                 f"{first_diff + 1}: expected {wanted!r}, got {got!r}")


def expect_notice(result: Result, first: int, last: int, total: int, bytes_cut: bool, what: str) -> None:
    want = f"[Showing lines {first}-{last} of {total}{' (50.0KB limit)' if bytes_cut else ''}. Use offset={last + 1} to continue.]"
    _, found = split_notice(result.text)
    expect(found and found.group(0).rstrip() == want, f"{what}: expected the output to end with {want!r}, got "
           + (repr(found.group(0).rstrip()) if found else f"no such notice at the end: {excerpt(result.text[-160:])}"))


def expect_no_notice(result: Result, what: str) -> None:
    _, found = split_notice(result.text)
    expect(not found and "[Showing" not in result.text,
           f"{what}: the whole file came back, so no notice should follow; got {excerpt(result.text[-160:])}")


# --- bash: the tail notice and the status lines ---------------------------------------------------

@dataclass
class Output:
    """A bash result split into the command's kept output and the notices at its end."""

    body: str
    notices: list[re.Match] = field(default_factory=list)

    def find(self, prefix: str) -> re.Match | None:
        return next((found for found in self.notices if found.group(0).startswith(prefix)), None)

    def spill(self) -> Path | None:
        found = self.find("[Showing")
        return Path(found.group(5)) if found else None


def parse(result: Result) -> Output:
    text, notices = result.text.rstrip(), []
    while True:
        for pattern in ENDINGS:
            found = re.search(r"(?:^|\n)(" + pattern + r")$", text)
            if found:
                notices.insert(0, re.fullmatch(pattern, found.group(1)))
                text = text[: found.start()].rstrip()
                break
        else:
            return Output(text.rstrip("\n"), notices)


def expect_spill(lab: Lab, output: Output, first: int, last: int, limit: str, whole: bytes | None = None) -> None:
    """The tail notice names lines first-last of last and the cap that cut it, and its file holds everything.
    The file is looked at only inside the check's own folders, never through a link."""
    want = f"[Showing lines {first}-{last} of {last} ({limit} limit). Full output: PATH]"
    found = output.find("[Showing")
    got = found.group(0) if found else f"no such notice at the end ({excerpt(output.body[-120:])})"
    path = Path(found.group(5)) if found else None
    try:
        expect(found and found.group(1, 2, 3, 4) == (str(first), str(last), str(last), limit), f"expected the output to end with {want}, got {got}")
        home = _home(lab, path)
        expect(home, f"the notice names {path}, which is not in the temp folder the tool was given ({lab.temp_dir}): "
                     "write the spill file with tempfile, which uses TMPDIR")
        expect(home.is_file(path), f"the notice names {path}, but there is no such file")
        if whole is not None:
            held = home.read_bytes(path)
            expect(held == whole, f"{path} should hold the whole output ({len(whole):,} bytes), it holds {len(held):,} bytes")
    finally:
        _remove_spill(lab, path)


def expect_notice_format(output: Output, limit: str) -> None:
    """Output that was cut ends with the tail notice in its fixed format, naming `limit`: judged before the lines kept,
    so that a notice written another way is named as that, not counted as one more line of output."""
    want = f"[Showing lines A-B of T ({limit} limit). Full output: PATH]"
    found = output.find("[Showing")
    if found:
        expect(found.group(4) == limit, f"the tail notice should name the cap that cut the output, {want}, got {found.group(0)}")
        return
    last = output.body.rsplit("\n", 1)[-1]
    stray = re.search(r"showing|full output|limit", last, re.IGNORECASE)
    expect(False, f"output that was cut should end with the tail notice, on a line of its own, in its fixed format {want}; got "
                  + (f"{excerpt(last, 160)}, which is not that format" if stray else f"no notice: {excerpt(output.body[-120:])}"))


def tidy(output: Output, lab: Lab) -> None:
    """Remove a spill file the check does not need (only from the check's own folders, never through a link)."""
    _remove_spill(lab, output.spill())


def _home(lab: Lab, path: Path | None):
    """The check's pinned folder that holds `path` (its temp folder or its working folder), if any."""
    if path is None or not path.is_absolute() or ".." in path.parts:
        return None
    return next((files for files in (lab.temp_files, lab.files) if path.is_relative_to(files.path) and path != files.path), None)


def _remove_spill(lab: Lab, path: Path | None) -> None:
    home = _home(lab, path)
    if home and path.name.startswith("rover-bash-") and home.is_file(path):
        home.unlink(path, missing_ok=True)
