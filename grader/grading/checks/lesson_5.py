"""Lesson 5: PLACEHOLDER (the real checks are being written by lessons56)."""
from __future__ import annotations

from grader.grading.checks import Lab, check, excerpt, expect


@check("search.placeholder")
def placeholder(lab: Lab) -> None:
    lab.file("a.py", "x = 1\ndef target():\n    pass\n")
    text = lab.ok("search", pattern="def target").text
    expect("a.py:2:" in text, f"search should answer path:line: text, got {excerpt(text)}")
