"""write: put whole content into a file, creating folders on the way.

The blunt instrument. It cannot corrupt a merge because it does not merge: whatever was in
the file is gone. That makes it right for new files and full rewrites, and wrong for small
changes, which is why the system prompt sends the model to edit for those.
"""
from __future__ import annotations

from pathlib import Path

from rover.tools.files import write_atomic
from rover.tools.result import ToolError, ToolResult

NAME = "write"
DESCRIPTION = (
    "Write content to a file, creating it and any missing folders, or replacing it completely. "
    "Use it for new files and full rewrites only; to change part of an existing file, use edit."
)
INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "The file to write, relative to the working directory."},
        "content": {"type": "string", "description": "The complete new content of the file."},
    },
    "required": ["path", "content"],
    "additionalProperties": False,
}


def run(cwd: Path, path: str, content: str) -> ToolResult:
    file = cwd / path
    if file.is_dir():
        raise ToolError(f"{path} is a directory. Give the path of a file inside it.")
    data = content.encode("utf-8")
    existed = file.exists()
    write_atomic(file, data)
    return ToolResult(f"{'Replaced' if existed else 'Created'} {path}: wrote {len(data)} bytes.")
