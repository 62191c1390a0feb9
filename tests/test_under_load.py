"""A check's verdict is the same on a busy machine: under four times the cores of competing load (CPU burners this test
starts and stops itself), a valid solution passes and a wrong one fails with its own message, never a timeout."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from contextlib import contextmanager

from grader.course import fixtures, kit
from grader.grading.runner import run_checks

LESSON = 3  # edit.directory and edit.atomic came back `timeout` on correct code under a load of 20-50


@contextmanager
def competing_load(factor: int = 4):
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(factor * (os.cpu_count() or 1))]
    try:
        yield
    finally:
        for burner in burners:
            burner.kill()
        for burner in burners:
            burner.wait()


def test_a_valid_solution_passes_and_a_wrong_one_fails_for_its_own_reason_at_four_times_the_cores(workspace, tmp_path):
    valid = workspace(LESSON, solved=True)
    wrong_case = next(case for case in fixtures.load(fixtures.WRONG) if case.lesson == LESSON)
    wrong = tmp_path / "wrong"
    shutil.copytree(valid, wrong)
    wrong_case.apply(wrong)
    named = [check for check in kit.lesson(LESSON).checks if check.id in wrong_case.catches]
    with competing_load():
        outcomes = run_checks(valid, list(kit.lesson(LESSON).checks))
        caught = run_checks(wrong, named)
    spoiled = [(outcome.check.id, outcome.status, outcome.message) for outcome in outcomes if not outcome.passed and not outcome.busy]
    assert not spoiled, f"a valid solution lost checks to the load: {spoiled}"
    for outcome in caught:
        assert outcome.status == "failed" or outcome.busy, (outcome.check.id, outcome.status, outcome.message)
