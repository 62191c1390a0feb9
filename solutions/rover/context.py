"""The context budget: keep what is sent each turn under a ceiling by eliding old tool results.

Every turn sends the whole conversation again, so a 40 KB read in turn 3 is paid for on
turn 4, 5, ... 40. Once the conversation passes the budget, the oldest tool results give way
to a one-line stub that says what was there and which call brings it back. Nothing else
changes: every tool_use keeps its tool_result (the API insists), and the latest turn, which
the model has not read yet, is never touched.
"""
from __future__ import annotations

import json
from typing import Any

BUDGET = 20_000  # tokens of conversation sent per turn before old tool results are elided
CHARS_PER_TOKEN = 4  # a rough offline estimate; the API counts exactly when live
ELIDED = "[elided"  # every stub starts so, and a stub is never elided again


def estimate_tokens(value: Any) -> int:
    """About how many tokens `value` costs, counted offline as its JSON text over 4."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return len(text) // CHARS_PER_TOKEN


def trim(messages: list[dict], budget: int) -> list[dict]:
    """The messages to send: old tool results replaced by stubs, oldest first, until under `budget`.

    Returns new lists and dicts; `messages` itself (the transcript) is left as it was.
    """
    excess = estimate_tokens(messages) - budget
    calls = {block["id"]: block for block in _blocks(messages, "assistant") if block.get("type") == "tool_use"}
    latest = max((index for index, message in enumerate(messages) if message.get("role") == "assistant"), default=0)
    kept = []
    for index, message in enumerate(messages):
        if excess > 0 and index < latest and message.get("role") == "user" and isinstance(message.get("content"), list):
            content = []
            for block in message["content"]:
                if excess > 0 and _elidable(block):
                    stub = _stub(calls.get(block.get("tool_use_id")), block)
                    excess -= estimate_tokens(block["content"]) - estimate_tokens(stub)
                    block = {**block, "content": stub}
                content.append(block)
            message = {**message, "content": content}
        kept.append(message)
    return kept


def _elidable(block: Any) -> bool:
    """A tool result that is worth more than its stub, and is not a stub already."""
    if not isinstance(block, dict) or block.get("type") != "tool_result":
        return False
    content = block.get("content")
    text = content if isinstance(content, str) else json.dumps(content)
    return not text.startswith(ELIDED) and len(text) > 400


def _stub(call: dict | None, result: dict) -> str:
    """One line: what was elided, and the call to repeat to see it again."""
    size = estimate_tokens(result["content"])
    if call is None:
        return f"{ELIDED}: an old tool result of about {size:,} tokens, dropped to save context.]"
    arguments = json.dumps(call.get("input"), ensure_ascii=False)
    arguments = arguments if len(arguments) <= 160 else arguments[:157] + "..."
    return (f"{ELIDED}: the {call.get('name')} result for {arguments}, about {size:,} tokens, dropped to save context. "
            f"Call {call.get('name')} again with the same input to see it.]")


def _blocks(messages: list[dict], role: str) -> list[dict]:
    return [block for message in messages if message.get("role") == role and isinstance(message.get("content"), list)
            for block in message["content"] if isinstance(block, dict)]
