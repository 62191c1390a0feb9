"""The one shape every tool answers in, and the exception that becomes an error answer."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ToolResult:
    """What the model sees: `text`, and whether the call failed.

    A failure is still an answer, not a crash: the model reads `text` and tries again,
    so an error text should say what was wrong and what to send instead.
    """

    text: str
    is_error: bool = False


class ToolError(Exception):
    """Raise inside a tool to refuse a call; the registry turns it into an is_error result."""
