"""edit: replace exact pieces of a file, each found once, all at once or not at all.

Rewriting a whole file to change a line costs tokens and risks losing what the model did not
copy back. An edit sends only the change, and its rules keep it safe: every oldText must be
found exactly once in the file as it was read (so the change lands where the model meant),
no two may overlap, and the file is written once, atomically, only if every edit fits.
"""
from __future__ import annotations

import bisect
import difflib
import os
import re
from pathlib import Path

from rover.tools.files import write_atomic
from rover.tools.result import ToolError, ToolResult

NAME = "edit"
DESCRIPTION = (
    "Edit an existing file by exact replacement. Each edit's oldText must match exactly one place in the "
    "file as it is now (copy it from a fresh read, without the line numbers) and edits must not overlap; "
    "include enough surrounding lines to make oldText unique. All edits apply together or none do. "
    "Returns a diff. Use write for new files."
)
INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "The file to edit, relative to the working directory."},
        "edits": {
            "type": "array",
            "minItems": 1,
            "description": "Replacements, each matched against the original file.",
            "items": {
                "type": "object",
                "properties": {
                    "oldText": {"type": "string", "description": "Exact text to replace; must occur once."},
                    "newText": {"type": "string", "description": "The text to put in its place."},
                },
                "required": ["oldText", "newText"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["path", "edits"],
    "additionalProperties": False,
}

BOM = "\ufeff"
HUNK = re.compile(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@")
NO_NEWLINE = "\\ No newline at end of file\n"


def run(cwd: Path, path: str, edits: list[dict]) -> ToolResult:
    file = cwd / path
    if file.is_dir():
        raise ToolError(f"{path} is a directory, not a file. Give the path of one file in it (ls lists them).")
    if not file.is_file():
        raise ToolError(f"File not found: {path}. edit changes existing files; use write to create one.")
    try:
        raw = file.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(f"{path} is not UTF-8 text; edit only changes text files.") from None
    bom = BOM if raw.startswith(BOM) else ""
    body = raw[len(bom):]
    original = body.replace("\r\n", "\n")  # match on LF text; each line keeps its own ending on the way out
    spans = sorted(_locate(original, path, number, edit) for number, edit in enumerate(edits, 1))
    for (_, end, first, _), (start, _, second, _) in zip(spans, spans[1:]):
        if start < end:
            raise ToolError(f"Edits {first} and {second} overlap in {path}. Merge them into one edit.")
    text = _apply(body, spans)
    write_atomic(file, (bom + text).encode("utf-8"))
    start, end, _, new = spans[0]
    same = len(os.path.commonprefix([original[start:end], new]))  # oldText often opens with unchanged lines of context
    line = original.count("\n", 0, start + same) + 1
    diff = _diff(path, body, text, _mapped(body, spans[0][0]), _mapped(body, spans[-1][1]))
    return ToolResult(f"Edited {path}: {len(spans)} replacement(s), first change at line {line}.\n\n{diff}")


def _locate(original: str, path: str, number: int, edit: dict) -> tuple[int, int, int, str]:
    """Where edit `number` applies: (start, end, number, newText), or a ToolError that teaches the fix."""
    old, new = edit["oldText"].replace("\r\n", "\n"), edit["newText"].replace("\r\n", "\n")
    if not old:
        raise ToolError(f"Edit {number}: oldText is empty. Give the exact text to replace; use write for a new file.")
    if old == new:
        raise ToolError(f"Edit {number}: oldText and newText are the same, so it changes nothing. Send only real changes.")
    start = original.find(old)
    if start < 0:
        raise ToolError(
            f"Edit {number}: oldText was not found in {path}. It must match exactly, spaces and line breaks "
            "included: read the file again and copy the text from it (without line numbers)."
        )
    count = _count(original, old)
    if count > 1:
        raise ToolError(
            f"Edit {number}: oldText matches {count} places in {path}; it must match exactly one. "
            "Include more of the surrounding lines to make it unique."
        )
    return start, start + len(old), number, new


def _count(text: str, piece: str) -> int:
    """Occurrences, overlapping ones included: 'aa' is in 'aaa' twice (str.count says once)."""
    count, start = 0, text.find(piece)
    while start >= 0:
        count, start = count + 1, text.find(piece, start + 1)
    return count


def _apply(body: str, spans: list[tuple[int, int, int, str]]) -> str:
    """The edits applied to the file's own text, so untouched lines keep their endings byte for byte.

    A position in the LF text sits one further on in `body` for each CRLF before it. New lines
    take the ending of the line their edit starts on.
    """
    crlf = [match.start() - index for index, match in enumerate(re.finditer("\r\n", body))]  # as LF positions
    pieces, cursor = [], 0
    for start, end, _, new in spans:
        start, end = start + bisect.bisect_left(crlf, start), end + bisect.bisect_left(crlf, end)
        newline = body.find("\n", start)
        ending = "\r\n" if (body[newline - 1] == "\r" if newline > 0 else bool(crlf)) else "\n"
        pieces += [body[cursor:start], new.replace("\n", ending)]
        cursor = end
    return "".join(pieces) + body[cursor:]


def _mapped(body: str, at: int) -> int:
    """A position in the LF copy as a position in the file's own text: one further on for every CRLF before it."""
    crlf = [match.start() - index for index, match in enumerate(re.finditer("\r\n", body))]
    return at + bisect.bisect_left(crlf, at)


def _diff(path: str, original: str, changed: str, start: int, end: int) -> str:
    """A unified diff of the changed region only, of the file's own lines (a CRLF line keeps its \\r, so patch
    applies it to the file): difflib over a whole large file is slow and hungry.

    Both texts agree before `start` and after `end` (shifted by the change in length), so the
    diff of a window of whole lines around [start, end) is the diff of the files, renumbered.
    """
    low = original.rfind("\n", 0, start) + 1  # the start of the first changed line
    for _ in range(3):  # and three lines of context before it
        low = original.rfind("\n", 0, max(low - 1, 0)) + 1
    high = end
    for _ in range(4):  # the end of the last changed line, and three more
        high = original.find("\n", high) + 1 or len(original)
    shift = original.count("\n", 0, low)
    lines = difflib.unified_diff(original[low:high].splitlines(True), changed[low:high + len(changed) - len(original)].splitlines(True),
                                 f"a/{path}", f"b/{path}")
    renumbered = (HUNK.sub(lambda m: f"@@ -{int(m[1]) + shift}{m[2] or ''} +{int(m[3]) + shift}{m[4] or ''} @@", line) for line in lines)
    return "".join(line if line.endswith("\n") else line + "\n" + NO_NEWLINE for line in renumbered)
