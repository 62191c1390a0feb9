"""The hidden checks, one module per lesson (`lesson_N.py`), registered by id.

A check is a function that takes a Lab (grader.grading.lab) and raises CheckFailed, through
`expect`, when the student's code misbehaves. It sees only what the Lab answers: data.
"""
from __future__ import annotations

import importlib
import json
from typing import Any, Callable

from grader.grading.lab import AgentRun, CheckFailed, Lab, Raised, Result, StudentCrashed, excerpt, expect, result_text, tool_results

__all__ = ["AgentRun", "CheckFailed", "Lab", "Raised", "Result", "REGISTRY", "StudentCrashed", "check", "excerpt", "expect", "load", "result_text", "shown", "tool_results"]

REGISTRY: dict[str, Callable[[Lab], None]] = {}


def check(check_id: str) -> Callable:
    def register(function: Callable[[Lab], None]) -> Callable[[Lab], None]:
        REGISTRY[check_id] = function
        return function

    return register


def load(lesson: int) -> None:
    importlib.import_module(f"grader.grading.checks.lesson_{lesson}")


def shown(value: Any, limit: int = 300) -> str:
    """A value as a person reads it in a failure message: data as JSON (no escaped quotes), text in quotes."""
    try:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = str(value)
    text = json.dumps(text, ensure_ascii=False) if isinstance(value, str) else text
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters in all)"
