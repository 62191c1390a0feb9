"""`class grade`'s reports for a workspace whose checks could not run: one cause, shown and counted once."""
from __future__ import annotations

import csv
import json

from rich.console import Console

from grader.classroom import class_report
from grader.commands.class_grade import _show
from tests.class_fixture import made_up_class

CAUSE = "rover does not import: SyntaxError in rover/tools/edit.py line 58: invalid syntax (edit.py, line 58)"


def test_a_workspace_that_does_not_import_is_one_cause_in_every_report(tmp_path):
    run = made_up_class(size=5, broken=(1,))
    broken = run.students[1]
    assert class_report.cause(broken) == CAUSE and class_report.cause(run.students[0]) == ""
    class_report.write_csv(run, tmp_path / "c.csv")
    with (tmp_path / "c.csv").open() as table:
        rows = {row["student"]: row for row in csv.DictReader(table)}
    assert rows["Grace Hopper-Brewster"]["problem"] == CAUSE and "regressions" not in rows["Grace Hopper-Brewster"]["result"]
    assert rows["Grace Hopper-Brewster"]["regressions"] == "", "the checks that could not run are not regressions"
    assert rows["Ada Lovelace"]["problem"] == "" and rows["notes"]["problem"].startswith("not a Rover workspace")
    report = class_report.as_json(run)
    assert report["not_importing"] == 1 and report["students"][1]["problem"] == CAUSE
    assert all(entry["failing"] <= 4 for entry in report["failing_most"]), "the broken workspace adds nothing to any check"
    html = class_report.render_html(run)
    assert html.count("does not import") == 2, "in the student's row, and once in the failing checks"
    assert "no check ran" in html and "1 of 5" in html
    console = Console(width=250, record=True)
    _show(run, console)
    row = next(line for line in console.export_text().splitlines() if "Grace Hopper" in line)
    assert f"✗ no check could run: {CAUSE}" in row and "regressions" not in row


def test_checks_that_fail_for_their_own_reasons_are_not_one_cause():
    run = made_up_class(size=4, broken=())
    assert [class_report.problem(student) for student in run.students[:4]] == ["", "", "", ""]
    assert class_report.as_json(run)["not_importing"] == 0
