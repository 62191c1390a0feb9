"""The harness in this very process, with no isolation at all: for authoring tests and benchmarks, reached only
through the explicitly named `Lab.in_process(...)`, never by default."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class InProcess:
    """The harness in this very process: for authoring tests that patch the registry; no isolation."""

    def __init__(self, workspace: Path):
        self.workspace = workspace

    def request(self, op: str, clock: Any, stopping: Any, on_model: Any = None, on_spy: Any = None, **fields: Any) -> dict:
        from grader.grading import harness

        fields.pop("tempdir", None)  # this process's temp folder stays as it is
        harness.MODEL[0] = lambda request: json.loads(json.dumps(on_model(request)))
        harness.SPY[0] = lambda args: on_spy(json.loads(json.dumps(args)))
        return json.loads(json.dumps(harness.answer(op, {"op": op, **fields}, str(self.workspace))))

    def running(self, pid: int) -> bool:
        from grader.boundary.processes import running

        return running(pid)

    def kill(self, pid: int) -> None:
        from grader.boundary.processes import kill_tree

        kill_tree([pid])

    def runnable(self, pid: int) -> bool:
        from grader.boundary.processes import process, runnable

        found = process(pid)
        return found is not None and runnable([found])

    def measure(self, call) -> tuple:
        import tracemalloc

        tracemalloc.start()
        try:
            result = call()
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        return result, peak
