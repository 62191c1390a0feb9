"""search: PLACEHOLDER for lesson 5 (being written by lessons56); finds lines matching a pattern."""
from __future__ import annotations

import re
from pathlib import Path

from rover.tools.result import ToolError, ToolResult

NAME = "search"
DESCRIPTION = "Search file contents for a regular expression; answers path:line: text."
INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "pattern": {"type": "string", "description": "A regular expression."},
        "path": {"type": "string", "description": "Folder to search. Default: ."},
    },
    "required": ["pattern"],
    "additionalProperties": False,
}


def run(cwd: Path, pattern: str, path: str = ".") -> ToolResult:
    try:
        regex = re.compile(pattern)
    except re.error as problem:
        raise ToolError(f"Invalid pattern {pattern!r}: {problem}") from None
    found = []
    for file in sorted((cwd / path).rglob("*")):
        if file.is_file() and "__pycache__" not in file.parts:
            for number, line in enumerate(file.read_text(errors="replace").splitlines(), 1):
                if regex.search(line):
                    found.append(f"{file.relative_to(cwd)}:{number}: {line[:500]}")
    return ToolResult("\n".join(found[:100]) or "No matches found")
