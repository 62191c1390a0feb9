"""`workshop class grade`: a class of workspaces in one command, from folders, git repositories and zips."""
from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from grader.classroom import bulk, class_report
from grader.cli import main
from grader.course import kit

GIT = ["git", "-c", "user.name=Ada Lovelace", "-c", "user.email=ada@example.invalid"]


def _commit(folder: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=folder, check=True)
    subprocess.run([*GIT, "add", "-A"], cwd=folder, check=True, capture_output=True)
    subprocess.run([*GIT, "commit", "-q", "--allow-empty", "-m", "my work"], cwd=folder, check=True, capture_output=True)


def _zip(folder: Path, archive: Path, prefix: str = "") -> Path:
    with zipfile.ZipFile(archive, "w") as bundle:
        for path in folder.rglob("*"):
            if path.is_file() and ".git" not in path.parts:
                bundle.write(path, prefix + path.relative_to(folder).as_posix())
    return archive


@pytest.fixture
def classroom(workspace, tmp_path):
    """A class folder: two workspaces (a stub, a solved one), a stray folder, a zip; plus a bare repo beside it."""
    room = tmp_path / "class"
    room.mkdir()
    workspace(1).rename(room / "alice")
    workspace(1, solved=True).rename(room / "bob")
    (room / "notes").mkdir()
    (room / "notes" / "todo.txt").write_text("not a workspace")
    carol = workspace(1, solved=True)
    _zip(carol, room / "carol.zip", prefix="rover-lesson-1/")
    dave = workspace(1)
    _commit(dave)
    subprocess.run(["git", "clone", "-q", "--bare", str(dave), str(tmp_path / "dave.git")], check=True)
    return room


def _run(*args: str):
    return CliRunner().invoke(main, ["class", "grade", *args], catch_exceptions=False)


def test_a_class_folder_a_bare_repo_and_a_url_grade_in_one_command(classroom, tmp_path):
    bare = tmp_path / "dave.git"
    result = _run(str(classroom), str(bare), bare.as_uri(), "--csv", str(tmp_path / "c.csv"),
                  "--json", str(tmp_path / "c.json"), "--html", str(tmp_path / "c.html"), "--jobs", "2")
    assert result.exit_code == 1, result.output  # not everyone passes (and one folder is no workspace)
    report = json.loads((tmp_path / "c.json").read_text())
    rows = {student["name"]: student for student in report["students"]}
    assert set(rows) == {"alice", "bob", "carol", "notes", "Ada Lovelace", "Ada Lovelace (2)"}
    assert rows["bob"]["grade"]["passed"] and rows["carol"]["grade"]["passed"], "a zip with a top folder is found"
    assert rows["alice"]["grade"]["score"] == len(kit.lesson(0).checks)
    assert rows["Ada Lovelace"]["grade"]["score"] == len(kit.lesson(0).checks), "the clone is graded"
    assert rows["notes"]["grade"] is None and "not a Rover workspace" in rows["notes"]["problem"]
    assert "notes" in result.output and "not graded" in result.output
    with (tmp_path / "c.csv").open() as table:
        lines = list(csv.DictReader(table))
    assert [line["student"] for line in lines][:4] == ["alice", "bob", "carol", "notes"]
    assert lines[0]["read.numbered"] == "failed" and lines[1]["read.numbered"] == "passed"
    assert lines[3]["score"] == "" and "not a Rover workspace" in lines[3]["result"]


def test_the_html_report_counts_failures_per_check_and_charts_each_lesson(classroom, tmp_path):
    run = bulk.run_class([str(classroom)], jobs=2)
    page = class_report.render_html(run)
    failing = dict(class_report.failures(run))
    numbered = next(check for check in failing if check.id == "read.numbered")
    assert failing[numbered] == 1, "only alice fails it"
    assert "Failing checks across the class" in page and "1 of 3" in page
    assert re.search(r"lesson-1</th><td>[^<]*</td><td class=chart><span class='bar done' style='width:66\.7%'>", page)
    assert "<script" not in page


def test_lesson_pins_the_grade_whatever_the_answers_file_claims(workspace, tmp_path):
    root = workspace(1)
    answers = root / ".copier-answers.yml"
    answers.write_text(answers.read_text().replace("lesson: 1", "lesson: 0"))
    [trusted] = bulk.run_class([str(root)]).students
    assert trusted.lesson == 0 and trusted.grade.passed, "without --lesson the file is read"
    [pinned] = bulk.run_class([str(root)], lesson=1).students
    assert pinned.lesson == 1 and not pinned.grade.passed
    assert {outcome.check.lesson for outcome in pinned.grade.outcomes} == {0, 1}
    answers.write_text(answers.read_text().replace("lesson: 0", "lesson: 99"))
    [broken] = bulk.run_class([str(root)]).students
    assert not broken.graded and "--lesson" in broken.problem


def test_a_zip_cannot_write_outside_its_folder_or_smuggle_links(tmp_path):
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.writestr("../escaped.txt", "out")
        bundle.writestr("/abs.txt", "out")
        link = zipfile.ZipInfo("link")
        link.external_attr = 0o120777 << 16
        bundle.writestr(link, "/etc/passwd")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    [student] = bulk.collect([str(archive)], scratch)
    assert not student.graded and "not a Rover workspace" in student.problem
    assert not (tmp_path / "escaped.txt").exists() and not Path("/abs.txt").exists()
    assert not any(path.is_symlink() for path in scratch.rglob("*"))


def test_nothing_is_left_behind_and_bad_report_paths_are_one_line(classroom, tmp_path):
    before = set(os.listdir(os.environ.get("TMPDIR", "/tmp")))
    bulk.run_class([str(classroom / "carol.zip")])
    assert not {name for name in set(os.listdir(os.environ.get("TMPDIR", "/tmp"))) - before if name.startswith("workshop-class-")}
    result = _run(str(classroom), "--csv", str(tmp_path / "missing" / "c.csv"))
    assert result.exit_code == 2 and result.output.count("\n") == 1 and "does not exist" in result.output


def test_ctrl_c_stops_the_class_and_leaves_no_process(workspace, tmp_path):
    import signal
    import sys
    import time

    room = tmp_path / "slow-class"
    room.mkdir()
    for index in range(4):
        workspace(2, solved=True).rename(room / f"s{index}")  # the bash checks wait on clocks: still busy after 2 s
    grading = subprocess.Popen([sys.executable, "-m", "grader.cli", "class", "grade", str(room), "--json", str(tmp_path / "c.json")],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(2)
    grading.send_signal(signal.SIGINT)
    stopped = time.monotonic()
    output, _ = grading.communicate(timeout=60)
    assert grading.returncode == 130, output
    assert time.monotonic() - stopped < 10 and "stopped" in output
    assert not (tmp_path / "c.json").exists(), "an interrupted run writes no report"
    time.sleep(0.5)
    left = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert str(room) not in left, [line for line in left.splitlines() if str(room) in line]
