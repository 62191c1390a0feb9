"""What the worker does for each request: call into the student's code and describe what happened as JSON data.

Every piece here (the scripted model, the spy tool, the agent driver) is the grader's; only
`rover.*` is the student's. The answer is plain data: `{"ok": ...}` with the result,
`{"raised": {type, message, where}}` when the student's code raised, or `{"bad": why}` when
it answered in a shape the grader does not take (a `text` that is not a real `str`, ...).
The grader checks all of it again: nothing here is trusted.
"""
from __future__ import annotations

import contextlib
import gc
import importlib
import json
import os
import tempfile
import traceback
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from grader.grading.scripted import MAX_REQUEST, Reply, ScriptError

MAX_TEXT = 8 << 20  # characters of one tool result the grader will look at
MAX_MESSAGE = 2000


WORKSPACE = [""]  # the workspace's path, to tell the student's frames from the grader's
MODEL = [None]  # how to ask the grader's scripted model: set by the worker (the pipes) or an in-process runner
SPY = [None]  # how the spy tool tells the grader of each call, as it happens (the pipes, or an in-process runner)


def answer(op: str, request: dict, workspace: str) -> dict:
    WORKSPACE[0] = workspace
    if request.get("tempdir"):  # each check's temp files (bash's spill files...) in a folder of the check's own
        tempfile.tempdir = os.environ["TMPDIR"] = request["tempdir"]
    try:
        return {"ok": OPS[op](request)}
    except Refused as refusal:
        return {"bad": str(refusal)}
    except BaseException as crash:  # SystemExit and KeyboardInterrupt included: the student's, reported
        return {"raised": describe(crash, workspace)}


class Refused(Exception):
    """The student's code answered in a shape the grader does not take."""


def describe(crash: BaseException, workspace: str) -> dict:
    """The exception's type, message, and the last line of the student's own code it passed through."""
    where = ""
    if isinstance(crash, SyntaxError) and crash.filename:
        where = f"{_relative(crash.filename, workspace)} line {crash.lineno}"
    else:
        for frame in reversed(traceback.extract_tb(crash.__traceback__)):
            if frame.filename.startswith(workspace):
                where = f"{_relative(frame.filename, workspace)} line {frame.lineno}"
                break
    message = repr(crash.code) if isinstance(crash, SystemExit) else _text(crash)
    return {"type": type(crash).__name__, "message": message[:MAX_MESSAGE], "where": where}


def _import(request: dict) -> dict:
    importlib.import_module("rover.tools")
    importlib.import_module("rover.agent")
    import os

    return {"pid": os.getpid()}


def _tool(request: dict) -> dict:
    from rover.tools import execute

    if request.get("settle"):  # before a measured call: hand freed memory back, so the peak is the call's own
        _settle_memory()
        return {}
    with _stdin_left_open() if request.get("open_stdin") else contextlib.nullcontext():
        return result_data(request["name"], execute(request["name"], request["args"], Path(request["cwd"])))


@contextlib.contextmanager
def _stdin_left_open():
    """For the call: stdin a pipe that stays open and never speaks, as a terminal or a caller's pipe would be (the
    worker's own stdin is /dev/null, which would hide a command that inherits it)."""
    quiet, held = os.pipe()
    saved = os.dup(0)
    os.dup2(quiet, 0)
    os.close(quiet)
    try:
        yield
    finally:
        os.dup2(saved, 0)
        for fd in (saved, held):
            os.close(fd)


def result_data(name: str, result: Any) -> dict:
    missing = object()
    text, is_error = getattr(result, "text", missing), getattr(result, "is_error", missing)
    if text is missing or is_error is missing:  # a str, a dict, None: not a result at all, and said so by its type
        raise Refused(f"{name} returned {type(result).__name__}, expected ToolResult (from rover.tools.result), "
                      f"with .text (a str) and .is_error (a bool); got {str(result)[:120]!r}")
    if type(text) is not str or type(is_error) is not bool:
        raise Refused(f"{name} returned a {type(result).__name__} whose .text is {type(text).__name__} and .is_error is "
                      f"{type(is_error).__name__}, expected ToolResult with .text a str and .is_error a bool")
    if len(text) > MAX_TEXT:
        raise Refused(f"{name} returned {len(text):,} characters of text; the grader reads at most {MAX_TEXT:,}")
    return {"text": text, "is_error": is_error}


def _schemas(request: dict) -> list:
    from rover.tools import schemas

    return plain(schemas())


def _call(request: dict) -> Any:
    return plain(getattr(importlib.import_module(request["module"]), request["function"])(*request["args"]))


def _run_agent(request: dict) -> dict:
    from rover.agent import Agent

    model, shown = _RemoteModel(), _Shown()
    extra = {"display": shown} if request.get("display") else {}  # the Display the workspace's CLI hands the loop, recorded
    agent = Agent(model, Path(request["cwd"]), system="You are Rover.", max_turns=request["max_turns"], **extra)
    spy_calls: list[dict] = []
    raised = None
    with _SpyTool(spy_calls, request["spy"]):  # the grader judges the calls it was told of, never this list
        try:
            answer = agent.run(request["task"])
        except ScriptError as overrun:
            answer, raised = None, {"type": "ScriptError", "message": _text(overrun)[:MAX_MESSAGE], "where": "", "from_script": True}
        except Exception as crash:
            answer, raised = None, describe(crash, WORKSPACE[0])
    return {"answer": plain(answer), "raised": raised, "messages": plain(getattr(agent, "messages", [])),
            "spy_calls": plain(spy_calls), "shown": shown.events[:1000]}


class _Shown:
    """A Display (rover.display's protocol: reply, tool, notice, summary) that records what the loop showed, as data."""

    def __init__(self):
        self.events: list[dict] = []

    def reply(self, reply: Any) -> None:
        self.events.append({"event": "reply", "content": plain(getattr(reply, "content", None))})

    def tool(self, call: Any, result: Any) -> None:
        self.events.append({"event": "tool", "id": plain(call.get("id") if isinstance(call, dict) else None),
                            "text": plain(getattr(result, "text", None)), "is_error": plain(getattr(result, "is_error", None))})

    def __getattr__(self, name: str) -> Any:  # notice, summary, context_bar...: shown by the CLI, not judged here
        return lambda *args, **kwargs: None


class _RemoteModel:
    """The model the student's loop talks to: each call goes to the grader, whose scripted model records and answers it."""

    def complete(self, system: str, messages: list[dict], tools: list[dict]) -> Reply:
        request = json.dumps({"system": system, "messages": messages, "tools": tools}, default=str)
        # a request too big to be a sane one is not sent down the pipe: the grader's model hears only its size
        reply = MODEL[0]({"oversize": len(request)} if len(request) > MAX_REQUEST else json.loads(request))
        if "error" in reply:
            raise ScriptError(str(reply["error"]))
        return Reply(reply["content"], reply["stop_reason"], reply["usage"])


def plain(data: Any) -> Any:
    """The data as JSON would carry it: str subclasses become real strings, anything else JSON cannot carry becomes str()."""
    return json.loads(json.dumps(data, default=str))


class _SpyTool:
    """A `touch` tool that records its calls, slipped into the student's registry for one run."""

    def __init__(self, calls: list[dict], active):
        self.calls, self.active = calls, bool(active)
        self.nonce = active if isinstance(active, str) else ""  # the grader's, for this run: in the schema and each result

    def __enter__(self) -> None:
        if not self.active:
            return
        import rover.tools
        from rover.tools.result import ToolResult

        def run(cwd, **args):
            self.calls.append(args)
            SPY[0](plain(args))  # told to the grader now, over the pipe, not in the run's answer
            return ToolResult(f"touched ({self.nonce})")

        rover.tools.TOOLS["touch"] = SimpleNamespace(
            NAME="touch", DESCRIPTION=f"Touch a file. ({self.nonce})", run=run,
            INPUT_SCHEMA={"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}},
        )

    def __exit__(self, *exc: object) -> None:
        if self.active:
            import rover.tools

            rover.tools.TOOLS.pop("touch", None)


def _settle_memory() -> None:
    gc.collect()
    try:
        import ctypes

        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _text(crash: BaseException) -> str:
    try:
        return str.__str__(str(crash))
    except BaseException:  # a student exception whose __str__ raises
        return f"<{type(crash).__name__} that cannot be shown>"


def _relative(filename: str, workspace: str) -> str:
    try:
        return str(Path(filename).relative_to(workspace))
    except ValueError:
        return filename


OPS = {"import": _import, "tool": _tool, "schemas": _schemas, "call": _call, "run_agent": _run_agent}
