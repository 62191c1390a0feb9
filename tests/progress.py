"""Progress by file: one line per test file as it finishes (passed, failed, skipped, seconds), not a row of dots.

Works alone and under pytest-xdist, where the dots of several workers would say nothing about where the run is.
Loaded by `-p tests.progress` (pyproject's addopts); `-v` brings back pytest's own line per test.
"""
from __future__ import annotations

import time
from collections import Counter, defaultdict

import pytest


class FileProgress:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.left: Counter[str] = Counter()
        self.outcomes: dict[str, Counter[str]] = defaultdict(Counter)
        self.started: dict[str, float] = {}
        self.done = 0
        self.total = 0

    def pytest_sessionstart(self, session) -> None:
        """xdist says "bringing up nodes..." at each step when not on a terminal (where it would rewrite the line): once."""
        dist = self.config.pluginmanager.get_plugin("terminaldistreporter")
        if dist is not None and callable(getattr(dist, "ensure_show_status", None)):
            show, shown = dist.ensure_show_status, []
            dist.ensure_show_status = lambda: shown or shown.append(show())

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items) -> None:
        self._count(item.nodeid for item in items)

    def pytest_xdist_node_collection_finished(self, node, ids) -> None:
        if not self.total:  # every worker collects the same tests: count them once
            self._count(ids)

    def _count(self, ids) -> None:
        for nodeid in ids:
            self.left[nodeid.split("::")[0]] += 1
        self.total = sum(self.left.values())

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        file = report.nodeid.split("::")[0]
        self.started.setdefault(file, time.monotonic())
        if report.when == "call" or (report.when == "setup" and report.outcome != "passed") or (report.when == "teardown" and report.outcome == "failed"):
            self.outcomes[file][report.outcome if report.when != "teardown" else "error"] += 1
        if report.when != "teardown":
            return
        self.left[file] -= 1
        self.done += 1
        if self.left[file] == 0:
            counts = ", ".join(f"{count} {outcome}" for outcome, count in sorted(self.outcomes[file].items()))
            seconds = time.monotonic() - self.started[file]
            reporter = self.config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None:
                reporter.ensure_newline()
                share = f"{100 * self.done // max(self.total, 1):>3}%"
                reporter.write_line(f"[{share}] {file}: {counts} ({seconds:.0f} s)", red="failed" in counts or "error" in counts)

    def pytest_report_teststatus(self, report, config):
        if config.getoption("verbose") <= 0 and report.when == "call" and report.outcome == "passed":
            return "passed", "", "PASSED"  # no dot: the file's line says it
        if config.getoption("verbose") <= 0 and report.skipped:
            return "skipped", "", "SKIPPED"  # no stray "s" before the next file's line: that line counts it
        return None


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # only the process that reports: the main one, or xdist's controller
        config.pluginmanager.register(FileProgress(config), "file-progress")
