"""The hidden checks, one module per lesson, and the small toolkit they are written with.

A check is a function that takes a Lab and raises CheckFailed (through `expect`) when the
student's code misbehaves. It runs inside the grader's worker process, with the workspace's
`rover` package importable, so it drives the student's own code exactly as Rover would.
"""
from __future__ import annotations

import importlib
import json
import shutil
from pathlib import Path
from typing import Any, Callable

from grader import kit

REGISTRY: dict[str, Callable[[Lab], None]] = {}


class CheckFailed(AssertionError):
    """The student's code ran, and did the wrong thing; the message says expected vs actual."""


def check(check_id: str) -> Callable:
    def register(function: Callable[[Lab], None]) -> Callable[[Lab], None]:
        REGISTRY[check_id] = function
        return function

    return register


def load(lesson: int) -> None:
    importlib.import_module(f"grader.checks.lesson_{lesson}")


def expect(condition: Any, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


def excerpt(text: str, limit: int = 300) -> str:
    """Show the model-visible text in a failure message, cut to a readable size."""
    text = str(text)
    return repr(text) if len(text) <= limit else repr(text[:limit]) + f"... ({len(text)} characters in all)"


class Lab:
    """One check's bench: the workspace under test and a fresh, empty directory to work in."""

    def __init__(self, workspace: Path, tmp: Path):
        self.workspace = workspace
        self.tmp = tmp

    def file(self, name: str, content: str | bytes) -> Path:
        path = self.tmp / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            content = content.encode("utf-8")
        path.write_bytes(content)
        return path

    def tool(self, name: str, **args: Any):
        """Call a tool through the student's registry, as the model would."""
        from rover.tools import execute

        result = execute(name, args, self.tmp)
        expect(isinstance(getattr(result, "text", None), str), f"{name} should return a ToolResult with .text, got {result!r:.200}")
        return result

    def ok(self, name: str, **args: Any):
        result = self.tool(name, **args)
        expect(not result.is_error, f"{name}({_args(args)}) should succeed, but returned an error: {excerpt(result.text)}")
        return result

    def error(self, name: str, **args: Any):
        result = self.tool(name, **args)
        expect(result.is_error, f"{name}({_args(args)}) should be an is_error result, but it succeeded with {excerpt(result.text)}")
        return result

    def stash(self) -> Path:
        """A fresh copy of pristine stash, the repo every scenario works on."""
        target = self.tmp / "stash"
        shutil.copytree(kit.root() / "stash", target, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
        return target

    def agent(self, turns: list[dict], cwd: Path | None = None, max_turns: int = 30):
        """The student's Agent, driven by a scripted model; returns (agent, model)."""
        from rover.agent import Agent
        from rover.model import ScriptedModel

        model = ScriptedModel(turns)
        return Agent(model, cwd or self.tmp, system="You are Rover.", max_turns=max_turns), model

    def scenario(self, lesson: int):
        """Replay lesson N's scripted scenario on a fresh stash; returns the agent after the run."""
        from rover.model import ScriptError

        turns = json.loads(kit.lesson(lesson).script.read_text(encoding="utf-8"))["turns"]
        agent, model = self.agent(turns, cwd=self.stash())
        try:
            agent.run(kit.lesson(lesson).scenario)
        except ScriptError as mismatch:
            raise CheckFailed(f"the scripted scenario went off course: {mismatch}") from None
        expect(len(model.calls) == len(turns), f"the loop stopped after {len(model.calls)} of the script's {len(turns)} turns")
        return agent


def tool_results(messages: list[dict]) -> list[dict]:
    """Every tool_result block sent back to the model so far, in order."""
    return [
        block
        for message in messages
        if message.get("role") == "user" and isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]


def _args(args: dict) -> str:
    shown = {key: repr(value) if len(repr(value)) <= 40 else repr(value)[:36] + "...'" for key, value in args.items()}
    return ", ".join(f"{key}={value}" for key, value in shown.items())
