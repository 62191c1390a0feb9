"""The bench a check works at: the only way a check reaches the student's code.

A check sees plain data: a tool call's `Result` (text and is_error), an `AgentRun` (the
messages, the model calls, the answer or the exception), files on disk under `lab.tmp`.
This keeps every verdict in the grader's hands: the implementation behind these methods
may run the student's code anywhere (a worker process), as long as it answers with data.
"""
from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.course import kit


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


class Lab:
    """One check's bench: the workspace under test and a fresh, empty directory to work in."""

    def __init__(self, workspace: Path, tmp: Path):
        self.workspace = workspace
        self.tmp = tmp

    # --- files, made and inspected by the grader itself ---------------------------------------

    def file(self, name: str, content: str | bytes) -> Path:
        path = self.tmp / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
        return path

    def stash(self) -> Path:
        """A fresh copy of pristine stash, the repo every scenario works on."""
        target = self.tmp / "stash"
        shutil.copytree(kit.root() / "stash", target, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
        return target

    # --- calls into the student's code ----------------------------------------------------------

    def tool(self, name: str, **args: Any) -> Result:
        """Call a tool through the student's registry, as the model would."""
        from rover.tools import execute

        result = execute(name, args, self.tmp)
        text, is_error = getattr(result, "text", None), getattr(result, "is_error", None)
        expect(type(text) is str and type(is_error) is bool,
               f"{name} should return a result with .text (a str) and .is_error (a bool), got {result!r:.200}")
        return Result(text, is_error)

    def ok(self, name: str, **args: Any) -> Result:
        result = self.tool(name, **args)
        expect(not result.is_error, f"{name}({_args(args)}) should succeed, but returned an error: {excerpt(result.text)}")
        return result

    def error(self, name: str, **args: Any) -> Result:
        result = self.tool(name, **args)
        expect(result.is_error, f"{name}({_args(args)}) should be an is_error result, but it succeeded with {excerpt(result.text)}")
        return result

    def measure(self, name: str, **args: Any) -> tuple[Result, int]:
        """A tool call and the extra memory (bytes, peak over the level before) that call alone took."""
        import tracemalloc

        tracemalloc.start()
        try:
            result = self.tool(name, **args)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        return result, peak

    def schemas(self) -> list[dict]:
        """The tool definitions the student's registry offers."""
        from rover.tools import schemas

        return json.loads(json.dumps(schemas()))

    def call(self, module: str, function: str, *args: Any) -> Any:
        """Call one of the workspace's seams (`rover.gate.decide`, ...) with JSON data; the answer as JSON data."""
        import importlib

        return json.loads(json.dumps(getattr(importlib.import_module(module), function)(*args)))

    def run_agent(self, turns: list[dict], task: str, cwd: Path | None = None, max_turns: int = 30, spy: bool = False,
                  may_raise: bool = False) -> AgentRun:
        """The student's Agent on a scripted model (the grader's own) for one task.

        An exception out of `run` ends the check as an error, unless `may_raise` (then it is in `run.raised`);
        the scripted model's own ScriptError (the loop left the script) is always returned, never raised.
        """
        from rover.agent import Agent

        from grader.grading.scripted import ScriptedModel, ScriptError

        model = ScriptedModel(turns)
        run = AgentRun(cwd or self.tmp)
        agent = Agent(model, run.cwd, system="You are Rover.", max_turns=max_turns)
        with _spy_tool(run.spy_calls, spy):
            try:
                run.answer = agent.run(task)
            except ScriptError as overrun:
                run.raised = Raised("ScriptError", str(overrun), from_script=True)
            except Exception as crash:
                run.raised = Raised(type(crash).__name__, str(crash))
        run.messages = json.loads(json.dumps(agent.messages, default=str))
        run.calls = model.calls
        _settle(run, may_raise)
        return run

    def scenario(self, lesson: int) -> AgentRun:
        """Replay lesson N's scripted scenario on a fresh stash; the run, after checking it kept to the script."""
        turns = json.loads(kit.lesson(lesson).script.read_text(encoding="utf-8"))["turns"]
        run = self.run_agent(turns, kit.lesson(lesson).scenario, cwd=self.stash())
        if run.raised and run.raised.from_script:
            raise CheckFailed(f"the scripted scenario went off course: {run.raised.message}")
        expect(run.raised is None, f"the scenario's run raised {run.raised and run.raised.type}: {excerpt(run.raised and run.raised.message)}")
        expect(len(run.calls) == len(turns), f"the loop stopped after {len(run.calls)} of the script's {len(turns)} turns")
        return run


def _settle(run: AgentRun, may_raise: bool) -> None:
    """Turn an unwritten loop or a crash into the check's end, unless the check asked to see it."""
    raised = run.raised
    if raised is None or raised.from_script:
        return
    if raised.type == "NotImplementedError":
        raise CheckFailed(f"not written yet: {raised.message}")
    if not may_raise:
        raise StudentCrashed(f"{raised.type}{' in ' + raised.where if raised.where else ''}: {raised.message}")


class _spy_tool:
    """A `touch` tool that records its calls, slipped into the student's registry for one run."""

    def __init__(self, calls: list[dict], active: bool):
        self.calls, self.active = calls, active

    def __enter__(self) -> None:
        if not self.active:
            return
        from types import SimpleNamespace

        import rover.tools
        from rover.tools.result import ToolResult

        def run(cwd, **args):
            self.calls.append(args)
            return ToolResult("touched")

        rover.tools.TOOLS["touch"] = SimpleNamespace(
            NAME="touch", DESCRIPTION="Touch a file.", run=run,
            INPUT_SCHEMA={"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}},
        )

    def __exit__(self, *exc: object) -> None:
        if self.active:
            import rover.tools

            rover.tools.TOOLS.pop("touch", None)


def tool_results(messages: list[dict]) -> list[dict]:
    """Every tool_result block sent back to the model so far, in order."""
    return [
        block
        for message in messages
        if isinstance(message, dict) and message.get("role") == "user" and isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]


def _args(args: dict) -> str:
    shown = {key: repr(value) if len(repr(value)) <= 40 else repr(value)[:36] + "...'" for key, value in args.items()}
    return ", ".join(f"{key}={value}" for key, value in shown.items())
