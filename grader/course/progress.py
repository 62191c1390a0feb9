"""Which lessons this workspace has seen pass, so a failing earlier lesson is called a regression only when it is one.

Kept in .git/workshop-passed.json, out of the student's way, beside the hint memory. A lesson left with
`workshop next --force` never passed: its failures are unfinished work, not a regression.
"""
from __future__ import annotations

import json
from pathlib import Path


def _memory(workspace: Path) -> Path:
    return workspace / ".git" / "workshop-passed.json"


def passed_before(workspace: Path) -> set[int]:
    try:
        known = json.loads(_memory(workspace).read_text())
        return {number for number in known if isinstance(number, int)} if isinstance(known, list) else set()
    except (OSError, ValueError):
        return set()


def remember(workspace: Path, outcomes) -> set[int]:
    """Add every lesson whose checks all pass in `outcomes`; returns the lessons known to have passed."""
    seen: dict[int, bool] = {}
    for outcome in outcomes:
        seen[outcome.check.lesson] = seen.get(outcome.check.lesson, True) and bool(outcome.passed)
    if not _memory(workspace).parent.is_dir():  # no .git to remember in (a bare render): assume each lesson did pass
        return set(seen)
    known = passed_before(workspace)
    now = known | {lesson for lesson, passed in seen.items() if passed}
    if now != known:
        try:
            _memory(workspace).write_text(json.dumps(sorted(now)))
        except OSError:  # a read-only workspace: only not remembered
            pass
    return now
