"""Lesson 6: PLACEHOLDER (the real checks are being written by lessons56)."""
from __future__ import annotations

from grader.grading.checks import Lab, check, expect


@check("gate.placeholder")
def placeholder(lab: Lab) -> None:
    verdict = lab.call("rover.gate", "decide", "rm -rf build", {"allow": ["rm"], "deny": ["rm -rf"]})
    expect(verdict == ["deny", "rm -rf"], f"rm -rf build should be denied by the rule rm -rf, got {verdict!r}")
