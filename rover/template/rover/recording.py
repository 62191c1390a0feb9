"""`--transcript FILE`: what each request to the model carried and what came back, saved as JSON.

The recording wraps the model and the display the loop already has, so the loop knows nothing of it.
The model side sees each request as sent (after lesson 8's trimming) and times it; the display side
sees each tool call with its result, and reads an edited or written file before the call runs, so the
transcript keeps its diff. `workshop transcript FILE` draws the file; its format is in the kit's README.
"""
from __future__ import annotations

import difflib
import json
import time
from pathlib import Path
from typing import Any

from rover.display import Display
from rover.model import Model, Reply
from rover.tools.result import ToolResult

FORMAT, VERSION = "rover-transcript", 2
SNAPSHOT_BYTES = 2_000_000  # a larger file is not read for its diff
DIFF_CHARS = 200_000  # a longer diff is cut, and says so
KINDS = ("prompt+tools", "task", "model", "tool results")  # what a request is made of, for the bar under each turn


class Recording:
    """Every request of one run, written to `path` by `save` (the loop's `finally`, so Ctrl-C keeps it too)."""

    def __init__(self, path: str | Path, cwd: Path, model: str, task: str):
        self.path, self.cwd = Path(path), cwd
        self.data: dict[str, Any] = {"format": FORMAT, "version": VERSION, "model": model, "task": task,
                                     "system": "", "tools": [], "requests": [], "messages": []}
        self.before: dict[Path, str | None] = {}

    def watch(self, model: Model, display: Display, bar: bool) -> tuple[Model, Display]:
        """The model and display to hand the loop instead: the same ones, recorded."""
        return _RecordedModel(model, self), _RecordedDisplay(display, self, bar)

    def request(self, system: str, messages: list[dict], tools: list[dict], reply: Reply, seconds: float) -> None:
        if not self.data["requests"]:
            self.data["system"], self.data["tools"] = system, _plain(tools)
        self.data["requests"].append({
            "messages": _plain(messages), "system_chars": len(system), "tools_chars": len(json.dumps(tools)),
            "reply": {"content": _plain(reply.content), "stop_reason": reply.stop_reason},
            "usage": _plain(reply.usage or {}), "seconds": round(seconds, 3), "tool_calls": [],
        })

    def snapshot(self, reply: Reply) -> None:
        """Before the tools run: the files this reply's edits and writes will change, as they are now."""
        for call in reply.content:
            if call.get("type") == "tool_use" and call.get("name") in ("edit", "write"):
                file = self._file(call)
                if file is not None:
                    self.before[file] = _text(file)

    def tool(self, call: dict, result: ToolResult) -> None:
        record = {"id": call.get("id"), "name": call.get("name"), "input": _plain(call.get("input")),
                  "result": result.text, "is_error": result.is_error, "diff": None}
        file = self._file(call)
        if file in self.before and not result.is_error:
            after = _text(file)
            record["diff"] = _diff(self.before[file], after, str((call.get("input") or {}).get("path", file.name)))
            self.before[file] = after  # a second edit of the same file in this reply diffs from here
        if self.data["requests"]:
            self.data["requests"][-1]["tool_calls"].append(record)

    def save(self, messages: list[dict]) -> None:
        self.data["messages"] = _plain(messages)
        self.path.write_text(json.dumps(self.data, indent=1), encoding="utf-8")

    def context(self) -> tuple[int, dict[str, float], int]:
        """The last request's size in tokens, each kind's share of it, and the tokens billed so far."""
        requests = self.data["requests"]
        sizes = [_input(request["usage"]) for request in requests]
        shares = dict.fromkeys(KINDS, 0)
        last = requests[-1]
        shares["prompt+tools"] = last["system_chars"] + last["tools_chars"]
        for message in last["messages"]:
            content = message.get("content")
            for block in content if isinstance(content, list) else [content]:
                shares[_kind(message.get("role"), block)] += len(json.dumps(block))
        whole = sum(shares.values()) or 1
        return sizes[-1], {kind: size / whole for kind, size in shares.items()}, sum(sizes)

    def _file(self, call: dict) -> Path | None:
        args = call.get("input") if isinstance(call.get("input"), dict) else {}
        path = args.get("path") or args.get("filePath") or args.get("file_path")  # as sent, before lesson 7's repair
        return (self.cwd / path).resolve() if isinstance(path, str) and path else None


class _RecordedModel:
    def __init__(self, model: Model, recording: Recording):
        self.model, self.recording = model, recording

    def complete(self, system: str, messages: list[dict], tools: list[dict]) -> Reply:
        started = time.monotonic()
        reply = self.model.complete(system, messages, tools)
        self.recording.request(system, messages, tools, reply, time.monotonic() - started)
        return reply

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)


class _RecordedDisplay:
    def __init__(self, display: Display, recording: Recording, bar: bool):
        self.display, self.recording, self.bar = display, recording, bar

    def reply(self, reply: Reply) -> None:
        self.display.reply(reply)
        self.recording.snapshot(reply)
        if self.bar and self.recording.data["requests"] and hasattr(self.display, "context_bar"):
            self.display.context_bar(*self.recording.context())

    def tool(self, call: dict, result: ToolResult) -> None:
        self.display.tool(call, result)
        self.recording.tool(call, result)

    def notice(self, text: str) -> None:
        self.display.notice(text)

    def summary(self) -> None:
        self.display.summary()


def _kind(role: Any, block: Any) -> str:
    if role == "assistant":
        return "model"
    return "tool results" if isinstance(block, dict) and block.get("type") == "tool_result" else "task"


def _input(usage: dict) -> int:
    """All the input a request carried: the API counts cached tokens apart from `input_tokens`."""
    return sum(int(usage.get(key) or 0) for key in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"))


def _plain(value: Any) -> Any:
    """A JSON copy, so later changes to the loop's own lists do not reach what was recorded."""
    return json.loads(json.dumps(value, default=str))


def _text(file: Path) -> str | None:
    """The file's text now: '' when it does not exist yet, None when it cannot be read or is too big to diff."""
    try:
        if not file.exists():
            return ""
        if not file.is_file() or file.stat().st_size > SNAPSHOT_BYTES:
            return None
        return file.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return None


def _diff(before: str | None, after: str | None, name: str) -> str | None:
    if before is None or after is None:
        return None
    diff = "\n".join(difflib.unified_diff(before.splitlines(), after.splitlines(), f"a/{name}", f"b/{name}", lineterm=""))
    return diff if len(diff) <= DIFF_CHARS else diff[:DIFF_CHARS] + f"\n… diff cut at {DIFF_CHARS:,} characters\n"
