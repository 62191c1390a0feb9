"""ls: list one directory, so the model can find its way around before it reads anything."""
from __future__ import annotations

from pathlib import Path

from rover.tools.result import ToolError, ToolResult

NAME = "ls"
DESCRIPTION = (
    "List the entries of a directory, sorted, with a trailing / on subdirectories. "
    "Use it to find your way around before reading files."
)
INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "Directory to list, relative to the working directory. Default: ."},
    },
    "additionalProperties": False,
}


def run(cwd: Path, path: str = ".") -> ToolResult:
    directory = cwd / path
    if not directory.exists():
        raise ToolError(f"{path} does not exist. List its parent directory to see what is there.")
    if not directory.is_dir():
        raise ToolError(f"{path} is a file, not a directory. Use read to see its contents.")
    entries = sorted(entry.name + ("/" if entry.is_dir() else "") for entry in directory.iterdir())
    return ToolResult("\n".join(entries) if entries else f"{path} is empty.")
