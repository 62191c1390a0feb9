"""The model side of the loop: what a reply is, what a model must do, and a model that replays a script.

The loop only ever calls `complete`. Anything with that method will do: the Anthropic API,
a local server that speaks its protocol, or the scripted model below, which makes runs
repeatable and lets the grader drive your loop without a network or a key.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol


@dataclass
class Reply:
    """One assistant turn: content blocks as plain dicts, why it stopped, and what it cost."""

    content: list[dict]
    stop_reason: str
    usage: dict = field(default_factory=dict)


class Model(Protocol):
    def complete(self, system: str, messages: list[dict], tools: list[dict]) -> Reply: ...


class ScriptError(Exception):
    """The run left the script: it ran out of turns, or a result lacked what the script expected."""


class OffScript(ScriptError):
    """A tool result lacked the text the script expected: the tools, or the repo under them, changed."""

    def __init__(self, turn: int, expected: str, seen: str):
        super().__init__(f"turn {turn} expected the tool results to contain {expected!r}, but they were:\n{seen[:600]}")
        self.turn, self.expected, self.seen = turn, expected, seen


class ScriptedModel:
    """Replays the turns of a script, one per call, checking each turn's `expect` on the way.

    A script is {"turns": [{"content": [...], "stop_reason": "tool_use", "expect": "..."}]}.
    `expect` is text the tool results just sent must contain, so a replay notices when the
    tools under it behave differently from the run that was recorded.
    """

    def __init__(self, turns: list[dict]):
        self.turns = turns
        self.calls: list[dict] = []

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedModel:
        """Load a script; one of the wrong shape is a ValueError saying where, not a crash mid-run."""
        script = json.loads(Path(path).read_text(encoding="utf-8"))
        turns = script.get("turns") if isinstance(script, dict) else None
        if not isinstance(turns, list):
            raise ValueError('the top level should be an object holding a "turns" list')
        for number, turn in enumerate(turns, 1):
            if problem := _turn_problem(turn):
                raise ValueError(f"turn {number}: {problem}")
        return cls(turns)

    def complete(self, system: str, messages: list[dict], tools: list[dict]) -> Reply:
        self.calls.append({"system": system, "messages": json.loads(json.dumps(messages)), "tools": tools})
        number = len(self.calls)
        if number > len(self.turns):
            raise ScriptError(f"the script has {len(self.turns)} turns and the loop asked for turn {number}")
        turn = self.turns[number - 1]
        if "expect" in turn:
            _check_expectation(turn["expect"], messages, number)
        usage = turn.get("usage") or _estimated_usage([system, messages, tools], turn["content"])
        return Reply(turn["content"], turn.get("stop_reason", "end_turn"), usage)


def _estimated_usage(request: list, content: list[dict]) -> dict:
    """Tokens for a turn the script gives none for, at about 4 characters a token, so replays show them too."""
    return {"input_tokens": len(json.dumps(request)) // 4, "output_tokens": len(json.dumps(content)) // 4}


def _turn_problem(turn: object) -> str | None:
    if not isinstance(turn, dict):
        return "each turn should be an object with a content list"
    content = turn.get("content")
    if not isinstance(content, list) or not all(isinstance(block, dict) and isinstance(block.get("type"), str) for block in content):
        return 'content should be a list of blocks such as {"type": "text", "text": "..."}'
    wrong = [key for key in ("stop_reason", "expect") if key in turn and not isinstance(turn[key], str)]
    return f"{wrong[0]} should be a string" if wrong else None


def _check_expectation(expected: str, messages: list[dict], number: int) -> None:
    last = messages[-1]["content"] if messages else ""
    blocks = last if isinstance(last, list) else [{"type": "text", "text": last}]
    seen = "\n".join(str(block.get("content", block.get("text", ""))) for block in blocks)
    if expected not in seen:
        raise OffScript(number, expected, seen)


class Recorder:
    """Wraps a model and saves each of its replies as a script turn, so a live run replays offline.

    The file is rewritten after every turn, so an interrupted run still leaves a usable script.
    Each turn after the first expects a line of the tool results the recorded run saw, so a
    replay through different tools says where it went another way.
    """

    def __init__(self, model: Model, path: str | Path):
        self.model = model
        self.path = Path(path)
        self.turns: list[dict] = []

    def complete(self, system: str, messages: list[dict], tools: list[dict]) -> Reply:
        reply = self.model.complete(system, messages, tools)
        turn = {"content": reply.content, "stop_reason": reply.stop_reason, "usage": reply.usage}
        expected = _sample(messages)
        self.turns.append({"expect": expected, **turn} if expected else turn)
        self.path.write_text(json.dumps({"turns": self.turns}, indent=2), encoding="utf-8")
        return reply


def _sample(messages: list[dict]) -> str | None:
    """The first non-blank line of the first successful tool result just sent, if any."""
    last = messages[-1]["content"] if messages else None
    for block in last if isinstance(last, list) else []:
        if block.get("type") == "tool_result" and not block.get("is_error"):
            for line in str(block.get("content", "")).splitlines():
                if line.strip():
                    return line.strip()[:80]
    return None
