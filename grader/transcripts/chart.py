"""What each request was made of, in tokens: the API reports one input count per request; this shares it out
over the request's blocks (system prompt, tool definitions, each message's blocks) by their size in characters,
so the shares are whole numbers that add up to the reported count exactly.

A block is named by where it sits, (message, block): trimming (lesson 8) changes a block's content, never its
place, so the same key across requests is the same block, sent again, or sent as its stub.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from grader.transcripts.load import Request, Run

CHARS_PER_TOKEN = 4  # the offline estimate, for a request whose usage was not recorded


@dataclass
class Segment:
    key: str  # "system", "tools", or "m{message}-b{block}"
    kind: str  # system, tools, task, model, tool, stub
    tool: str  # the tool's name for a tool result or call, else ""
    tokens: int
    detail: str = ""  # what the call was about: its path, command or pattern


def input_tokens(request: Request) -> int:
    """Everything the request carried: the API counts cached tokens apart from `input_tokens`."""
    usage = request.usage
    return usage["input_tokens"] + usage["cache_read_input_tokens"] + usage["cache_creation_input_tokens"]


def segments(run: Run, request: Request, first: dict[str, str]) -> list[Segment]:
    """The request's blocks, each with its share of the request's input tokens. `first` holds each block's
    content the first time it was sent (filled in here), to tell a stub from the block it replaced."""
    names = _tool_names(request.messages)
    parts: list[tuple[str, str, tuple[str, str], int]] = []
    if request.system_chars or run.system:
        parts.append(("system", "system", ("", ""), request.system_chars or len(run.system)))
    if request.tools_chars or run.tools:
        parts.append(("tools", "tools", ("", ""), request.tools_chars or len(json.dumps(run.tools))))
    for m, message in enumerate(request.messages):
        content = message["content"]
        for b, block in enumerate(content if isinstance(content, list) else [content]):
            key, text = f"m{m}-b{b}", _text(block)
            first.setdefault(key, text)
            kind, tool = _kind(message["role"], block, names)
            if kind == "tool" and text != first[key]:
                kind = "stub"
            parts.append((key, kind, tool, len(text)))
    total = input_tokens(request) or sum(size for *_, size in parts) // CHARS_PER_TOKEN
    shares = share_out(total, [size for *_, size in parts])
    return [Segment(key, kind, tool, tokens, detail) for (key, kind, (tool, detail), _), tokens in zip(parts, shares)]


def share_out(total: int, weights: list[int]) -> list[int]:
    """`total` split in proportion to `weights`, in whole numbers that sum to `total` (largest remainder)."""
    if not weights:
        return []
    whole = sum(weights)
    if whole == 0:
        return [total] + [0] * (len(weights) - 1)
    exact = [total * weight / whole for weight in weights]
    shares = [int(value) for value in exact]
    for index in sorted(range(len(weights)), key=lambda i: exact[i] - shares[i], reverse=True)[:total - sum(shares)]:
        shares[index] += 1
    return shares


def _text(block: Any) -> str:
    """What a block costs: a string as it is, a block as its JSON (which is about what the API reads)."""
    return block if isinstance(block, str) else json.dumps(block, ensure_ascii=False)


def _kind(role: str, block: Any, names: dict[str, tuple[str, str]]) -> tuple[str, tuple[str, str]]:
    if role == "assistant":
        return "model", (describe_call(block) if isinstance(block, dict) and block.get("type") == "tool_use" else ("", ""))
    if isinstance(block, dict) and block.get("type") == "tool_result":
        return "tool", names.get(str(block.get("tool_use_id")), ("", ""))
    return "task", ("", "")


def _tool_names(messages: list[dict]) -> dict[str, tuple[str, str]]:
    return {str(block.get("id")): describe_call(block) for message in messages if message["role"] == "assistant"
            and isinstance(message["content"], list) for block in message["content"] if block.get("type") == "tool_use"}


def describe_call(block: dict) -> tuple[str, str]:
    """A tool call's name, and in a few words what it was about."""
    args = block.get("input") if isinstance(block.get("input"), dict) else {}
    detail = next((str(args[key]) for key in ("command", "pattern", "path", "filePath", "file_path") if args.get(key)), "")
    return str(block.get("name", "")), detail if len(detail) <= 48 else detail[:47] + "…"
