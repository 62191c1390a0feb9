"""`workshop class grade`: a class of workspaces in one command, from folders, git repositories and zips."""
from __future__ import annotations

import csv
import functools
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
    assert set(rows) == {"alice", "bob", "carol", "notes", "dave", "dave (2)"}, "named by what the instructor gave"
    assert rows["dave"]["author"] == rows["dave (2)"]["author"] == "Ada Lovelace" and rows["bob"]["author"] is None
    assert rows["bob"]["grade"]["passed"] and rows["carol"]["grade"]["passed"], "a zip with a top folder is found"
    own = sum(check.points for check in kit.lesson(1).checks)
    assert (rows["bob"]["grade"]["score"], rows["bob"]["grade"]["max_score"]) == (own, own), "lesson 1's own checks carry the points"
    assert (rows["alice"]["grade"]["score"], rows["alice"]["grade"]["max_score"]) == (0, own), "the solved lesson 0 earns nothing"
    assert rows["alice"]["grade"]["regressions"] == [] and not rows["alice"]["grade"]["passed"]
    assert rows["dave"]["grade"]["max_score"] == own and rows["dave"]["grade"]["score"] == 0, "the clone is graded"
    assert report["sandbox"] == "bwrap" or report["sandbox"]  # whatever the boundary chose, named
    assert rows["notes"]["grade"] is None and "not a Rover workspace" in rows["notes"]["problem"]
    assert "notes" in result.output and "not graded" in result.output
    with (tmp_path / "c.csv").open() as table:
        lines = list(csv.DictReader(table))
    assert [line["student"] for line in lines][:4] == ["alice", "bob", "carol", "notes"]
    assert lines[0]["read.numbered"] == "failed" and lines[1]["read.numbered"] == "passed"
    assert (lines[0]["score"], lines[0]["max_score"], lines[0]["regressions"]) == ("0", str(own), "0")
    assert lines[3]["score"] == "" and "not a Rover workspace" in lines[3]["result"]
    assert {line["sandbox"] for line in lines} == {report["sandbox"]}
    assert {line["student"]: line["author"] for line in lines if line["student"].startswith("dave")} == \
        {"dave": "Ada Lovelace", "dave (2)": "Ada Lovelace"} and lines[1]["author"] == "", "the commit author beside the name"


def test_the_html_report_counts_failures_per_check_and_charts_each_lesson(classroom, tmp_path):
    run = bulk.run_class([str(classroom)], jobs=2)
    page = class_report.render_html(run)
    failing = dict(class_report.failures(run))
    numbered = next(check for check in failing if check.id == "read.numbered")
    assert failing[numbered] == 1, "only alice fails it"
    assert "Failing checks across the class" in page and "1 of 3" in page
    assert re.search(r"lesson-1</th><td>[^<]*</td><td class=chart><span class='bar done' style='width:66\.7%'>", page)
    assert "<script" not in page
    matrix = page[page.index("<table class=students>"):]
    assert matrix.count("<th class=lesson") == 2, "the matrix folds by lesson: one column each, not one per check"
    assert "position:sticky" in page and "<th class=name" in matrix
    alice = matrix[matrix.index(">alice<"):].split("</tr>")[0]
    assert "<details><summary>✗ " in alice and "read.numbered" in alice, "a lesson's failing checks open from its cell"


def test_a_workspace_that_does_not_import_is_graded_as_one_cause(workspace, tmp_path):
    room = tmp_path / "class"
    room.mkdir()
    broken = workspace(3, solved=True).rename(room / "grace")
    with (broken / "rover/tools/edit.py").open("a") as source:
        source.write("def edit(:\n")
    workspace(3, solved=True).rename(room / "ada")
    result = _run(str(room), "--csv", str(tmp_path / "c.csv"), "--json", str(tmp_path / "c.json"))
    assert result.exit_code == 1
    with (tmp_path / "c.csv").open() as table:
        rows = {row["student"]: row for row in csv.DictReader(table)}
    assert rows["grace"]["problem"].startswith("rover does not import: SyntaxError in rover/tools/edit.py line "), rows["grace"]
    assert rows["ada"]["problem"] == "" and rows["ada"]["score"] == rows["ada"]["max_score"]
    report = json.loads((tmp_path / "c.json").read_text())
    assert report["not_importing"] == 1 and report["failing_most"] == [], "grace's one cause fails no check for the class"
    assert "regressions" not in " ".join(result.output.split()), "the table names the cause, not 45 regressions"


def test_lesson_pins_the_grade_whatever_the_answers_file_claims(workspace, tmp_path):
    root = workspace(1)
    answers = root / ".copier-answers.yml"
    answers.write_text(answers.read_text().replace("lesson: 1", "lesson: 0"))
    [trusted] = bulk.run_class([str(root)]).students
    assert trusted.lesson == 0 and trusted.passed, "without --lesson the file is read"
    [pinned] = bulk.run_class([str(root)], lesson=1).students
    assert pinned.lesson == 1 and not pinned.passed and pinned.score == 0
    assert {outcome.check.lesson for outcome in pinned.outcomes} == {0, 1}
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
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    grading = subprocess.Popen([sys.executable, "-m", "grader.cli", "class", "grade", str(room), "--json", str(tmp_path / "c.json")],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    deadline = time.monotonic() + 60
    while not any("workshop-class-" in line for line in _processes_under(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.2)  # until students are being graded (a loaded machine may take seconds to get there)
    time.sleep(1)
    grading.send_signal(signal.SIGINT)
    stopped = time.monotonic()
    output, _ = grading.communicate(timeout=60)
    assert grading.returncode == 130, output
    assert time.monotonic() - stopped < 10 and "stopped" in output
    assert not (tmp_path / "c.json").exists(), "an interrupted run writes no report"
    assert not list(tmp_path.glob("workshop-class-*")), "the run folder (copies, clones, zips) is gone"
    assert not _processes_under(tmp_path)


def _processes_under(folder: Path) -> list[str]:
    """Processes whose command line or working directory lies in `folder`."""
    import psutil

    found = []
    for process in psutil.process_iter(["pid", "cmdline", "cwd"]):
        where = " ".join(process.info["cmdline"] or []) + " " + (process.info["cwd"] or "")
        if str(folder) in where and process.pid != os.getpid():
            found.append(where)
    return found


@pytest.mark.parametrize("target, says", [
    ("missing-folder", "no such file or folder"),
    ("notes.txt", "not a folder or a zip"),
    ("fake.zip", "not a folder or a zip"),
    ("file:///no/such/repo.git", "not a repository on this machine"),
    ("file://elsewhere/srv/alice.git", "not a repository on this machine"),
    ("https://example.invalid/alice.git", "only repositories on disk"),
])
def test_a_target_that_cannot_be_graded_is_one_line_and_exit_2(tmp_path, monkeypatch, target, says):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("hello")
    (tmp_path / "fake.zip").write_text("not a zip at all")
    result = CliRunner().invoke(main, ["class", "grade", target, "--csv", "c.csv"])
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1 and says in result.output and "Traceback" not in result.output
    assert not (tmp_path / "c.csv").exists()


def test_a_target_that_cannot_be_read_is_one_line_and_exit_2(tmp_path, monkeypatch):
    (tmp_path / "locked").mkdir()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: False if Path(path).name == "locked" else real_access(path, mode))
    result = CliRunner().invoke(main, ["class", "grade", str(tmp_path / "locked")])
    assert result.exit_code == 2 and result.output.count("\n") == 1 and "cannot be read" in result.output


def test_a_folder_without_a_workspace_stays_a_row(tmp_path):
    (tmp_path / "empty").mkdir()
    result = _run(str(tmp_path / "empty"))
    assert result.exit_code == 1 and "not graded" in result.output and "not a Rover workspace" in result.output


def test_a_zip_of_60000_entries_is_refused_from_its_directory_in_well_under_a_second(tmp_path):
    import time

    archive = tmp_path / "flood.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        for index in range(60_000):
            bundle.writestr(f"f{index}", b"")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    started = time.monotonic()
    [student] = bulk.collect([str(archive)], scratch)
    assert time.monotonic() - started < 0.5
    assert "more than 10,000 entries" in student.problem and not any(scratch.rglob("f1"))


def _path_without_bwrap(tmp_path: Path) -> str:
    """A PATH with every command of this one but bwrap."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for folder in os.environ["PATH"].split(os.pathsep):
        for tool in Path(folder).glob("*") if Path(folder).is_dir() else []:
            if tool.name != "bwrap" and not os.path.lexists(bin_dir / tool.name):
                (bin_dir / tool.name).symlink_to(tool)
    return str(bin_dir)


def test_without_a_sandbox_class_grade_refuses_unless_told_and_then_every_report_says_so(workspace, tmp_path, monkeypatch):
    root = workspace(1, solved=True)
    monkeypatch.setenv("PATH", _path_without_bwrap(tmp_path))
    from grader.boundary.backends import bwrap

    # bwrap is probed once a process: a fresh probe for this test's PATH, and the process's own back afterwards
    monkeypatch.setattr(bwrap, "why_not", functools.cache(bwrap.why_not.__wrapped__))
    refused = CliRunner().invoke(main, ["class", "grade", str(root)])
    assert refused.exit_code == 2 and refused.output.count("\n") == 1, refused.output
    assert "bubblewrap" in refused.output and "apt-get install bubblewrap" in refused.output and "--unsafe-no-sandbox" in refused.output
    reports = {kind: tmp_path / f"c.{kind}" for kind in ("csv", "html", "json")}
    done = CliRunner().invoke(main, ["class", "grade", str(root), "--unsafe-no-sandbox",
                                     *(arg for kind, path in reports.items() for arg in (f"--{kind}", str(path)))])
    assert done.exit_code == 0, done.output
    assert "WITHOUT a sandbox" in done.output
    assert json.loads(reports["json"].read_text())["unsafe"] is True
    assert "--unsafe-no-sandbox" in next(csv.DictReader(reports["csv"].open()))["sandbox"]
    assert "<p class=unsafe>Graded without a sandbox" in reports["html"].read_text()


def test_names_are_defused_in_the_csv_and_stripped_of_escapes_on_the_terminal(workspace, tmp_path):
    """A repository's name (the row's) and its author (beside it) are both the student's to choose."""
    names = ['=HYPERLINK("evil.invalid";"click")', "@SUM(A1:A9)", "+cmd|calc!A1"]
    author = "\x1b]0;owned\x07\x1b[2Jclear\x1b[31m"
    room = tmp_path / "repos"
    room.mkdir()
    for index, name in enumerate(names):
        folder = workspace(1).rename(tmp_path / f"w{index}")
        subprocess.run(["git", "init", "-q"], cwd=folder, check=True)
        subprocess.run(["git", "-c", f"user.name={author}", "-c", "user.email=x@example.invalid", "add", "-A"], cwd=folder, check=True)
        subprocess.run(["git", "-c", f"user.name={author}", "-c", "user.email=x@example.invalid", "commit", "-qm", "w"], cwd=folder, check=True)
        subprocess.run(["git", "clone", "-q", "--bare", str(folder), str(room / f"{name}.git")], check=True)
    result = _run(*(str(room / f"{name}.git") for name in names), "--csv", str(tmp_path / "c.csv"))
    assert "\x1b" not in result.output and "\x07" not in result.output and "clear" in result.output
    cells = [row["student"] for row in csv.DictReader((tmp_path / "c.csv").open())]
    assert cells == ["'" + name for name in names], "a spreadsheet shows them as text"
    assert not any(cell.startswith(("=", "+", "-", "@", "\t", "\r")) for row in csv.reader((tmp_path / "c.csv").open()) for cell in row)


def test_a_result_the_busy_machine_spoiled_is_graded_once_more(workspace, tmp_path, monkeypatch):
    from grader.classroom import student_run
    from grader.grading.runner import Outcome

    check = kit.lesson(0).checks[0]
    answers = [[Outcome(check, "error", "the machine was too busy to finish this check; run it again")],
               [Outcome(check, "passed")], [Outcome(check, "error", "the machine was too busy again")]]
    runs = []

    def fake_run(copy, lesson, folder, token, timeout, sandbox, user=None):
        runs.append(copy)
        return student_run.Graded(lesson, answers[len(runs) - 1], None, 0.1, 0.1)

    monkeypatch.setattr(student_run, "_run_check", fake_run)
    (tmp_path / "one").mkdir()
    root = workspace(0)
    graded = student_run.grade_student(root, 0, tmp_path / "one", "t", 60, None)
    assert len(runs) == 2 and graded.outcomes[0].passed, "re-run once, on a fresh copy"
    assert runs[0] != runs[1]
    (tmp_path / "two").mkdir()
    answers[:2] = [answers[2], answers[2]]
    runs.clear()
    graded = student_run.grade_student(root, 0, tmp_path / "two", "t", 60, None)
    assert len(runs) == 2 and graded.outcomes[0].status == "error", "only once: a machine that stays busy is reported"


def test_a_grader_package_in_the_workspace_cannot_stand_in_for_the_kit(workspace):
    """The grading process runs in the student's copy, but imports the kit by the grader's own path, not the cwd."""
    root = workspace(1)
    forged = {"lesson": 1, "passed": True, "score": 99, "max_score": 99,
              "checks": [{"id": check.id, "lesson": check.lesson, "title": "", "status": "passed", "message": "", "hints": [],
                          "points": 1} for number in (0, 1) for check in kit.lesson(number).checks]}
    (root / "grader").mkdir()
    (root / "grader" / "__init__.py").write_text("")
    (root / "grader" / "cli.py").write_text(f"import json\ndef main():\n    print(json.dumps({forged!r}))\n")
    [student] = bulk.run_class([str(root)], lesson=1).students
    assert student.graded and student.score == 0 and not student.passed


def test_a_row_stopped_for_memory_no_count_could_pin_is_graded_again_alone_after_the_class(workspace, tmp_path, monkeypatch):
    """One student's socket buffers trip every classmate's witness of memory held by no process (and a classmate who
    hides disk, the disk's): each such row is graded once more after the class, with no run beside it, so what its
    witnesses see then is its own."""
    import threading
    import time

    from grader.classroom import student_run
    from grader.boundary.hidden_memory import LOST
    from grader.grading.runner import Outcome

    check = kit.lesson(0).checks[0]
    tripped = Outcome(check, "error", f"{LOST} 5,000 MB during the run (allowed: 4,096 MB): socket or pipe buffers ...")
    running, calls, lock = set(), [], threading.Lock()

    def fake_run(copy, lesson, folder, token, timeout, sandbox, user=None):
        run = copy.parent.name  # student-N-attempt; student 0 hoards
        with lock:
            calls.append((run, len(running)))
            running.add(run)
        time.sleep(0.2)  # the three first runs overlap: three rows, three jobs
        with lock:
            running.discard(run)
        alone = all(beside == 0 for name, beside in calls if name == run) and not running
        hoards = run.startswith("student-0-")
        return student_run.Graded(lesson, [tripped if hoards or not alone else Outcome(check, "passed")], None, 0.2, 0.1)

    monkeypatch.setattr(student_run, "_run_check", fake_run)
    monkeypatch.setattr(student_run, "private_copy", lambda source, target: target.mkdir())
    root = workspace(0)  # never copied: the fake run grades nothing
    students = [bulk.Student(f"s{index}", "here", root, 0) for index in range(3)]
    (scratch := tmp_path / "scratch").mkdir()
    shown = []
    bulk.grade_all(students, scratch, "bwrap", jobs=3, progress=shown.append)
    assert [student.outcomes[0].status for student in students] == ["error", "passed", "passed"]
    again = calls[3:]
    assert sorted(name for name, _ in again) == ["student-0-2", "student-1-2", "student-2-2"] and len(calls) == 6
    assert all(beside == 0 for _, beside in again), "graded again one at a time"
    assert sorted(student.name for student in shown) == ["s0", "s1", "s2"], "one line a row, once graded for good"
    assert not os.listdir(scratch)
