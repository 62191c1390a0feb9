"""The live line `workshop check` shows on a terminal while it grades: how many checks are done, and one that runs.

It is drawn by rich's Live, transient: it disappears before the result is drawn, and a pipe, `--json` or CI never
see it (the caller decides; see check.py).
"""
from __future__ import annotations

import threading
import time

from rich.text import Text


class ProgressLine:
    """`grading: 37 of 122 checks done · running search.gitignore` (the check that has run longest)."""

    def __init__(self, total: int):
        self.total, self.done = total, 0
        self._running: dict[str, float] = {}
        self._lock = threading.Lock()  # lanes start checks in their own threads; Live draws in another

    def started(self, check) -> None:
        with self._lock:
            self._running[check.id] = time.monotonic()

    def finished(self, outcome) -> None:
        with self._lock:
            self.done = min(self.total, self.done + 1)  # a check graded again (too busy) counts once
            self._running.pop(outcome.check.id, None)

    def __rich__(self) -> Text:
        with self._lock:
            oldest = min(self._running.items(), key=lambda item: item[1], default=None)
            done = self.done
        if not oldest and not done:  # the worker is still importing the student's rover
            return Text("grading: importing rover…", style="dim", no_wrap=True, overflow="ellipsis")
        line = f"grading: {done} of {self.total} checks done"
        return Text(line + (f" · running {oldest[0]}" if oldest else ""), style="dim", no_wrap=True, overflow="ellipsis")
