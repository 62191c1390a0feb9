"""Small helpers that run inside the worker, through the Lab's `call` op, for what a plain call cannot show.

`lab.call("grader.grading.checks.probe", NAME, ...)` imports this module in the worker and calls
NAME there: each function calls the student's code and answers with plain data (what the call
returned, and what the input looked like afterwards), so a check can see a changed-in-place input.
Nothing here decides a verdict: the check judges the data it gets back, as always.
"""
from __future__ import annotations

import copy
import importlib
from pathlib import Path
from typing import Any

HERE = "grader.grading.checks.probe"


def keeping_input(module: str, function: str, *args: Any) -> dict:
    """`function(*args)`'s result (or the exception it raised: type and message), and the arguments as they were after the call."""
    try:
        answer: dict = {"result": copy.deepcopy(getattr(importlib.import_module(module), function)(*args))}
    except Exception as raised:  # the check may expect it (a ToolError that names both values)
        answer = {"raised": {"type": type(raised).__name__, "message": str(raised)}}
    return {**answer, "args_after": list(args)}


def answer_always(command: str, cwd: str, rules_file: str, first: str = "always") -> list[dict]:
    """Run `command` through the registry with the person answering `first` ("always", or "y"), then again with nobody there.

    The gate's rules file is pointed at `rules_file` (a copy in the check's folder) for this worker only,
    also where a function took it as its default argument.
    """
    from rover import gate, person
    from rover.tools import execute

    path = Path(rules_file)
    gate.RULES_FILE = path
    for function in vars(gate).values():
        defaults = getattr(function, "__defaults__", None)
        if callable(function) and defaults:
            function.__defaults__ = tuple(path if isinstance(value, Path) and value.name == "permissions.toml" else value
                                          for value in defaults)
    answers, before = [], person.script([])
    try:
        for script in ([first], []):
            person.script(script)
            result = execute("bash", {"command": command}, Path(cwd))
            answers.append({"text": str(result.text), "is_error": bool(result.is_error)})
    finally:  # the worker's answers as they were: a later check's scenario (lesson 7's pytest run) needs its "y"
        person.script(before)
    return answers


def value(module: str, name: str) -> Any:
    """A module's constant (BUDGET), as data."""
    return getattr(importlib.import_module(module), name)
