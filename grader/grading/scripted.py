"""The grader's own scripted model: the student's loop is driven by this, never by the workspace's copy.

It answers `complete(system, messages, tools)` with the script's turns in order, records each
request as plain data, and raises ScriptError when the loop asks for more turns than the
script has, a turn's `expect` text is missing from the tool results just sent, or a request
is too big to be a sane one (a flood of tool output sent on to the model).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field


MAX_REQUEST = 4 << 20  # characters of one request's JSON; every call is sent back to the grader, so it adds up


@dataclass
class Reply:
    content: list[dict]
    stop_reason: str
    usage: dict = field(default_factory=dict)


class ScriptError(Exception):
    """The loop left the script: it asked past the last turn, or a result lacked the expected text."""


class ScriptedModel:
    """Runs in the grader's process; the worker's model client asks it for each reply (`serve`)."""

    def __init__(self, turns: list[dict]):
        self.turns = turns
        self.calls: list[dict] = []
        self.replies: list[list] = []  # the content of each reply given, in order
        self.error = ""  # the first ScriptError it raised: the loop left the script

    def serve(self, request) -> dict:
        """One call as the worker passed it on (plain JSON data): the reply, or {"error": why} once off the script."""
        if not isinstance(request, dict):
            request = {"system": None, "messages": [], "tools": []}
        messages = request.get("messages") if isinstance(request.get("messages"), list) else []
        try:
            if type(request.get("oversize")) is int:
                raise ScriptError(_oversize(request["oversize"]))
            reply = self.complete(request.get("system"), messages, request.get("tools"))
        except ScriptError as off:
            self.error = self.error or str(off)
            return {"error": str(off)}
        return {"content": reply.content, "stop_reason": reply.stop_reason, "usage": reply.usage}

    def complete(self, system: str, messages: list[dict], tools: list[dict]) -> Reply:
        request = json.dumps({"system": system, "messages": messages, "tools": tools}, default=str)
        if len(request) > MAX_REQUEST:
            raise ScriptError(_oversize(len(request)))
        self.calls.append(json.loads(request))
        number = len(self.calls)
        if number > len(self.turns):
            raise ScriptError(f"the script has {len(self.turns)} turns and the loop asked for turn {number}")
        turn = self.turns[number - 1]
        if "expect" in turn:
            seen = last_results_text(messages)
            if turn["expect"] not in seen:
                raise ScriptError(f"turn {number} expected the tool results to contain {turn['expect']!r}, but they were:\n{seen[:600]}")
        self.replies.append(json.loads(json.dumps(turn["content"])))
        return Reply(json.loads(json.dumps(turn["content"])), turn.get("stop_reason", "end_turn"), dict(turn.get("usage", {})))

    def messages(self) -> list[dict]:
        """The conversation as the model saw it: the last request's messages and the last reply (the evidence checks judge)."""
        if not self.calls:
            return []
        last = self.calls[-1].get("messages")
        said = [{"role": "assistant", "content": self.replies[-1]}] if len(self.replies) == len(self.calls) else []
        return (list(last) if isinstance(last, list) else []) + said


def last_results_text(messages: list[dict]) -> str:
    """The text of the last message's blocks (tool results or plain text), joined."""
    last = messages[-1].get("content", "") if messages and isinstance(messages[-1], dict) else ""
    blocks = last if isinstance(last, list) else [{"type": "text", "text": last}]
    return "\n".join(block_text(block) for block in blocks)


def block_text(block: object) -> str:
    """A block's text as the model reads it. A tool_result's content may be a string or a list of text blocks
    (`[{"type": "text", "text": ...}]`): the API takes both, so both are read."""
    if not isinstance(block, dict):
        return str(block)
    body = block.get("content", block.get("text", ""))
    if isinstance(body, list):
        return "\n".join(str(part.get("text", "")) if isinstance(part, dict) else str(part) for part in body)
    return str(body)


def _oversize(size: int) -> str:
    return (f"the loop sent the model a request of {size:,} characters; a real API refuses "
            f"far less, and the grader reads at most {MAX_REQUEST:,}: are tool results bounded?")
