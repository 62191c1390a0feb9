"""read: show part of a text file, numbered, and say exactly where the part stopped.

A model cannot see what a tool leaves out. If a read drops the end of a file without a word,
the model edits code it never saw; if a read returns a whole log, the context fills up. So a
read is capped, streams the file instead of loading it, and every cut names the next offset.
"""
from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

from rover.tools.limits import MAX_BYTES, MAX_LINES, format_size
from rover.tools.result import ToolError, ToolResult

NAME = "read"
DESCRIPTION = (
    "Read a text file. Each line comes numbered (number, tab, text) so you can point at it. "
    f"One call returns at most {MAX_LINES} lines or {format_size(MAX_BYTES)}, whichever comes first; "
    "when the file goes on, the output ends with the offset to continue from."
)
INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "The file to read, relative to the working directory."},
        "offset": {"type": "integer", "minimum": 1, "description": "Line to start at, counting from 1. Default 1."},
        "limit": {"type": "integer", "minimum": 1, "description": "Most lines to return. Default: as many as the caps allow."},
    },
    "required": ["path"],
    "additionalProperties": False,
}

CHUNK = 1 << 20


def run(cwd: Path, path: str, offset: int = 1, limit: int | None = None) -> ToolResult:
    file = cwd / path
    if not file.exists():
        raise ToolError(f"File not found: {path}. Check the name with ls, relative to the working directory.")
    if file.is_dir():
        raise ToolError(f"{path} is a directory, not a file. Use ls to see what it holds.")
    with file.open("rb") as stream:
        if b"\0" in stream.read(8192):
            raise ToolError(f"{path} looks like a binary file (it has NUL bytes); read only shows text.")
        stream.seek(0)
        return _read_from(stream, path, offset, min(limit or MAX_LINES, MAX_LINES))


def _read_from(stream: BinaryIO, path: str, offset: int, want: int) -> ToolResult:
    skipped = _skip_lines(stream, offset - 1)
    if skipped < offset - 1:
        raise _past_end(path, offset, skipped)
    shown: list[str] = []
    used = 0
    cut = ""
    while len(shown) < want:
        line = stream.readline(MAX_BYTES + 1)
        if not line:
            break
        if used + len(line) > MAX_BYTES:
            if not shown:  # one line alone is over the cap: describe it instead
                size = len(line) + (0 if line.endswith(b"\n") else _skip_line(stream))
                return _long_line(path, offset, size, offset + _count_lines(stream))
            cut = f" ({format_size(MAX_BYTES)} limit)"
            stream.seek(-len(line), 1)
            break
        used += len(line)
        text = line.decode("utf-8", "replace").rstrip("\r\n")
        shown.append(f"{offset + len(shown):>6}\t{text}")
    if not shown and offset > 1:
        raise _past_end(path, offset, offset - 1)
    last = offset + len(shown) - 1
    total = last + _count_lines(stream)
    text = "\n".join(shown) if shown else f"{path} is empty."
    if last < total:
        text += f"\n\n[Showing lines {offset}-{last} of {total}{cut}. Use offset={last + 1} to continue.]"
    return ToolResult(text)


def _skip_line(stream: BinaryIO) -> int:
    """Read past the rest of one line in capped pieces; return how many bytes it had."""
    size = 0
    while True:
        piece = stream.readline(CHUNK)
        size += len(piece)
        if not piece or piece.endswith(b"\n"):
            return size


def _skip_lines(stream: BinaryIO, count: int) -> int:
    """Move past `count` lines, a chunk at a time; return how many lines there were to skip."""
    skipped, last = 0, b"\n"
    while skipped < count and (chunk := stream.read(CHUNK)):
        newlines, last = chunk.count(b"\n"), chunk[-1:]
        if skipped + newlines >= count:  # the last line to skip ends in this chunk: stop right after it
            end = -1
            for _ in range(count - skipped):
                end = chunk.index(b"\n", end + 1)
            stream.seek(end + 1 - len(chunk), 1)
            return count
        skipped += newlines
    return skipped + (last != b"\n")  # a last line without a newline still counts


def _count_lines(stream: BinaryIO) -> int:
    """Lines from here to the end of the file, counted a chunk at a time."""
    count, last = 0, b"\n"
    while chunk := stream.read(CHUNK):
        count += chunk.count(b"\n")
        last = chunk[-1:]
    return count + (last != b"\n")


def _past_end(path: str, offset: int, total: int) -> ToolError:
    return ToolError(f"Offset {offset} is past the end of {path}, which has {total} lines. Use an offset from 1 to {total}.")


def _long_line(path: str, number: int, size: int, total: int) -> ToolResult:
    text = (
        f"[Line {number} of {path} is {format_size(size)} long, over the {format_size(MAX_BYTES)} limit for one read. "
        f"See part of it with bash: sed -n '{number}p' {path} | cut -c1-2000"
    )
    if number < total:
        text += f". Or skip it with offset={number + 1}"
    return ToolResult(text + ".]")
