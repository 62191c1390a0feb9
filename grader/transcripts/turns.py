"""The conversation below the chart: every block once, as first sent, with its tool call's diff, its stub if
trimming replaced it later, and how often it was sent. Every text passes `clean` on its way to the page, and
long texts are folded (past a screen) and, past SHOW_CHARS, cut, with a note that the file holds the rest.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from grader.transcripts.chart import describe_call
from grader.transcripts.load import Run

FOLD_LINES = 40  # a text longer than a screen shows this many lines, the rest behind a <details>
SHOW_CHARS = 100_000  # a longer text is cut on the page (the transcript file keeps all of it)
_UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069\ufffe\uffff]")


def clean(text: Any) -> str:
    """Text that is safe to put on a page (Jinja escapes the markup): control characters shown as their symbols,
    lone surrogates, C1 controls and direction overrides as �."""
    text = text if isinstance(text, str) else str(text)
    return _UNSAFE.sub(lambda found: chr(0x2400 + ord(found[0])) if ord(found[0]) < 0x20 else
                       "␡" if found[0] == "\x7f" else "\ufffd", text)


@dataclass
class Folded:
    head: str
    rest: str = ""
    rest_lines: int = 0
    cut: int = 0  # characters left off the page

    @classmethod
    def of(cls, text: str, shown: int = FOLD_LINES) -> Folded:
        cut = max(0, len(text) - SHOW_CHARS)
        lines = clean(text[:SHOW_CHARS]).split("\n")
        if len(lines) <= shown + 5:  # folding five lines away would only cost a click
            return cls("\n".join(lines), cut=cut)
        return cls("\n".join(lines[:shown]), "\n".join(lines[shown:]), len(lines) - shown, cut)


@dataclass
class Item:
    """One block of the conversation, as the page shows it."""

    key: str
    kind: str  # task, words, call, result
    title: str
    body: Folded
    tool: str = ""
    error: bool = False
    diff: list[tuple[str, str]] = field(default_factory=list)  # (css class, line)
    stub: str = ""
    stub_from: int = 0  # the request (1-based) from which a stub went instead
    sent: int = 0
    billed: int = 0


@dataclass
class Turn:
    """A request's reply (with the request's figures) and the results sent back after it; or the task."""

    number: int  # the request, 1-based; 0 for the opening task
    figures: str
    items: list[Item]


def conversation(run: Run) -> list[dict]:
    """Every message once, as first sent: the requests' messages grow by appending, and each reply is the next."""
    messages: list[dict] = []
    for request in run.requests:
        messages.extend(request.messages[len(messages):])
        if len(messages) == len(request.messages):
            messages.append({"role": "assistant", "content": request.reply["content"]})
    return messages


def turns(run: Run, prefix: str, stubs: dict[str, tuple[int, str]], sent: dict[str, tuple[int, int]]) -> list[Turn]:
    calls = {str(call.get("id")): call for request in run.requests for call in request.tool_calls}
    replies = {len(request.messages): number for number, request in enumerate(run.requests, 1)}
    names: dict[str, str] = {}
    found: list[Turn] = []
    for m, message in enumerate(conversation(run)):
        content = message["content"] if isinstance(message["content"], list) else [message["content"]]
        if m in replies:
            found.append(Turn(replies[m], _figures(run, replies[m]), []))
        elif not found:
            found.append(Turn(0, "", []))
        for b, block in enumerate(content):
            key = f"m{m}-b{b}"
            item = _item(message["role"], block, f"{prefix}{key}", names, calls)
            if item is None:
                continue
            item.stub_from, item.stub = stubs.get(key, (0, ""))
            item.stub = clean(item.stub)
            item.sent, item.billed = sent.get(key, (0, 0))
            found[-1].items.append(item)
    return found


def _item(role: str, block: Any, key: str, names: dict[str, str], calls: dict[str, dict]) -> Item | None:
    if isinstance(block, str):
        return Item(key, "task" if role == "user" else "words", "task" if role == "user" else "", Folded.of(block))
    kind = block.get("type")
    if kind == "text":
        return Item(key, "task" if role == "user" else "words", "task" if role == "user" else "", Folded.of(str(block.get("text", ""))))
    if kind == "tool_use":
        name, detail = (clean(part) for part in describe_call(block))
        names[str(block.get("id"))] = f"{name} result" + (f": {detail}" if detail else "")
        record = calls.get(str(block.get("id")), {})
        diff = record.get("diff") if isinstance(record.get("diff"), str) else ""
        return Item(key, "call", f"{name} call" + (f": {detail}" if detail else ""), Folded.of(_arguments(block.get("input"))),
                    tool=name, diff=[_diff_line(line) for line in clean(diff[:SHOW_CHARS]).split("\n") if line])
    if kind == "tool_result":
        content = block.get("content")
        text = content if isinstance(content, str) else "\n".join(
            str(part.get("text", "")) if isinstance(part, dict) else str(part) for part in content or [])
        title = names.get(str(block.get("tool_use_id")), "tool result")
        return Item(key, "result", title, Folded.of(text), tool=title.split(" ")[0], error=bool(block.get("is_error")))
    return Item(key, "words", clean(kind), Folded.of(json.dumps(block, ensure_ascii=False)))


def _arguments(value: Any) -> str:
    """A call's arguments: on one line when they are short, else one key a line."""
    short = json.dumps(value, ensure_ascii=False)
    return short if len(short) <= 120 else json.dumps(value, indent=1, ensure_ascii=False)


def _diff_line(line: str) -> tuple[str, str]:
    if line.startswith(("+++", "---")):
        return "file", line
    return {"+": "add", "-": "del", "@": "hunk"}.get(line[:1], "same"), line


def _figures(run: Run, number: int) -> str:
    request = run.requests[number - 1]
    usage = request.usage
    parts = [f"in {usage['input_tokens']:,}", f"out {usage['output_tokens']:,}"]
    if usage["cache_read_input_tokens"] or usage["cache_creation_input_tokens"]:
        parts.append(f"cache read {usage['cache_read_input_tokens']:,} · write {usage['cache_creation_input_tokens']:,}")
    if request.seconds is not None:
        parts.append(f"{request.seconds:.2f} s")
    return " · ".join(parts) if not run.estimated else "tokens estimated (the file has no usage)"
