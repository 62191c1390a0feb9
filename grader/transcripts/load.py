"""A transcript file read and checked: the JSON `python -m rover --transcript` writes (version 2), or the older
bare list of messages (version 1), turned into one shape. A file from elsewhere is data, not trusted: anything
of the wrong shape is a `NotATranscript` naming the first thing wrong, for one line on the screen.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FORMAT, VERSION = "rover-transcript", 2
USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


class NotATranscript(Exception):
    """The file cannot be drawn; the message says why, in one line."""


@dataclass
class Request:
    messages: list[dict]
    reply: dict
    usage: dict[str, int]
    system_chars: int = 0
    tools_chars: int = 0
    seconds: float | None = None
    tool_calls: list[dict] = field(default_factory=list)


@dataclass
class Run:
    name: str
    requests: list[Request]
    model: str = ""
    task: str = ""
    system: str = ""
    tools: list = field(default_factory=list)
    estimated: bool = False  # version 1 carries no usage: every figure is the offline estimate


def load(path: Path) -> Run:
    try:
        data = json.loads(path.read_bytes().decode("utf-8", errors="replace"))
    except OSError as problem:
        raise NotATranscript(f"{path} cannot be read ({problem.strerror or problem})") from None
    except ValueError as problem:
        raise NotATranscript(f"{path} is not a transcript: it is not JSON ({str(problem)[:80]})") from None
    except RecursionError:
        raise NotATranscript(f"{path} is not a transcript: its JSON is nested too deep") from None
    try:
        return _run(path, data)
    except _Wrong as wrong:
        raise NotATranscript(f"{path} is not a transcript: {wrong}; `python -m rover --transcript FILE` writes one") from None


class _Wrong(Exception):
    pass


def _run(path: Path, data: Any) -> Run:
    if isinstance(data, list):
        return _version_1(path, data)
    if not isinstance(data, dict):
        raise _Wrong("the top level should be an object")
    if "turns" in data and "format" not in data:
        raise _Wrong("it is a script for `--model scripted:`, not a recorded run")
    if data.get("format") != FORMAT:
        raise _Wrong(f'"format" should be "{FORMAT}"')
    if data.get("version") != VERSION:
        version = data.get("version")
        newer = isinstance(version, int) and not isinstance(version, bool) and version > VERSION
        raise _Wrong(f"version {version!r} is {'from a newer kit: upgrade it' if newer else 'unknown'}; this kit reads {VERSION}")
    requests = _list(data.get("requests"), "requests")
    return Run(path.name, [_request(request, f"requests[{n}]") for n, request in enumerate(requests)],
               model=_str(data.get("model", ""), "model"), task=_str(data.get("task", ""), "task"),
               system=_str(data.get("system", ""), "system"), tools=_list(data.get("tools", []), "tools"))


def _version_1(path: Path, messages: list) -> Run:
    """The old file, the final messages only: each assistant turn's request is the messages before it."""
    _messages(messages, "the message list")
    requests = []
    for index, message in enumerate(messages):
        if message["role"] == "assistant":
            content = message["content"] if isinstance(message["content"], list) else [{"type": "text", "text": message["content"]}]
            usage = dict.fromkeys(USAGE_KEYS, 0)  # estimated as the scripted model does: 4 characters a token
            usage["input_tokens"], usage["output_tokens"] = len(json.dumps(messages[:index])) // 4, len(json.dumps(content)) // 4
            requests.append(Request(messages[:index], {"content": content, "stop_reason": ""}, usage))
    return Run(path.name, requests, estimated=True)


def _request(value: Any, where: str) -> Request:
    if not isinstance(value, dict):
        raise _Wrong(f"{where} should be an object")
    reply = value.get("reply")
    if not isinstance(reply, dict):
        raise _Wrong(f"{where}.reply should be an object")
    _blocks(reply.get("content"), f"{where}.reply.content")
    usage = value.get("usage", {})
    if not isinstance(usage, dict):
        raise _Wrong(f"{where}.usage should be an object")
    counts = {key: _count(usage.get(key) or 0, f"{where}.usage.{key}") for key in USAGE_KEYS}
    calls = _list(value.get("tool_calls", []), f"{where}.tool_calls")
    if not all(isinstance(call, dict) for call in calls):
        raise _Wrong(f"{where}.tool_calls should hold objects")
    seconds = value.get("seconds")
    if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0):
        raise _Wrong(f"{where}.seconds should be a number of seconds, 0 or more")
    return Request(_messages(value.get("messages"), f"{where}.messages"), reply, counts,
                   _count(value.get("system_chars", 0), f"{where}.system_chars"),
                   _count(value.get("tools_chars", 0), f"{where}.tools_chars"), seconds, calls)


def _messages(value: Any, where: str) -> list[dict]:
    for n, message in enumerate(_list(value, where)):
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            raise _Wrong(f"{where}[{n}] should be a message with the role user or assistant")
        if not isinstance(message.get("content"), str):
            _blocks(message.get("content"), f"{where}[{n}].content")
    return value


def _blocks(value: Any, where: str) -> None:
    if not all(isinstance(block, dict) and isinstance(block.get("type"), str) for block in _list(value, where)):
        raise _Wrong(f'{where} should be a list of blocks such as {{"type": "text", "text": "..."}}')


def _list(value: Any, where: str) -> list:
    if not isinstance(value, list):
        raise _Wrong(f"{where} should be a list")
    return value


def _str(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise _Wrong(f"{where} should be a string")
    return value


def _count(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _Wrong(f"{where} should be a whole number, 0 or more")
    return value
