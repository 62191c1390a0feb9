"""What a check sees and how it says no: plain data (a tool call's `Result`, an `AgentRun`, a `Raised`) and the two
ends a check can meet (`CheckFailed`, `StudentCrashed`).

Apart from the bench (grader.grading.lab) so that what judges that data (lab, spy, the checks) imports it from below,
never from each other.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.grading.scripted import block_text as result_text  # noqa: F401  (a tool_result's text, string or list of text blocks)

MESSAGE_LIMIT = 700  # characters of a message in any report


class CheckFailed(AssertionError):
    """The student's code ran, and did the wrong thing; the message says expected vs actual."""


class StudentCrashed(Exception):
    """The student's code raised where it should have answered: reported as an `error`, not a `failed`."""


def expect(condition: Any, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


def excerpt(text: Any, limit: int = 300) -> str:
    """Show the model-visible text in a failure message, cut to a readable size."""
    text = str(text)
    return repr(text) if len(text) <= limit else repr(text[:limit]) + f"... ({len(text)} characters in all)"


@dataclass(frozen=True)
class Result:
    """What one tool call gave the model."""

    text: str
    is_error: bool


@dataclass(frozen=True)
class Raised:
    """An exception that left the student's code: its type name, message and where (file line)."""

    type: str
    message: str
    where: str = ""
    from_script: bool = False  # raised by the grader's scripted model: the loop asked past the script


@dataclass
class AgentRun:
    """One run of the student's Agent on a scripted model, as data."""

    cwd: Path
    answer: Any = None
    raised: Raised | None = None
    messages: list[dict] = field(default_factory=list)  # agent.messages after the run
    calls: list[dict] = field(default_factory=list)  # each model call: {"system", "messages", "tools"}
    spy_calls: list[dict] = field(default_factory=list)  # calls the spy `touch` tool received
    shown: list[dict] = field(default_factory=list)  # what the loop showed on its display (run_agent(display=True))


def settle(run: AgentRun, may_raise: bool) -> None:
    """Turn an unwritten loop or a crash into the check's end, unless the check asked to see it."""
    raised = run.raised
    if raised is None or raised.from_script:
        return
    if raised.type == "NotImplementedError":
        raise CheckFailed(f"not written yet: {raised.message}")
    if raised.type == "SystemExit":
        raise StudentCrashed(f"the code called sys.exit({raised.message}); return or raise instead of exiting")
    if not may_raise:
        raise StudentCrashed(f"{raised.type}{' in ' + raised.where if raised.where else ''}: {raised.message}")


def tool_results(messages: list[dict]) -> list[dict]:
    """Every tool_result block sent back to the model so far, in order."""
    return [
        block
        for message in messages
        if isinstance(message, dict) and message.get("role") == "user" and isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]
