"""Issue 25's holes on the class side, doors 4 and 5: a classmate's work graded as one's own (a link, a repository
that borrows, a commit author taken for a name), a zip whose end record lies, and a submission whose names or
messages stopped `workshop class grade` or lost its reports. Most need no grading at all: what the importer finds
decides what would be graded.
"""
from __future__ import annotations

import csv
import json
import os
import subprocess
import time
from pathlib import Path

from grader.course import kit


def _git(folder: Path, *args: str, author: str = "Ada") -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": author, "GIT_COMMITTER_NAME": "x", "GIT_AUTHOR_EMAIL": "x@example.invalid",
           "GIT_COMMITTER_EMAIL": "x@example.invalid"}
    subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True, env=env)


def _bare(folder: Path, target: Path, author: str = "Ada") -> Path:
    _git(folder, "init", "-q")
    _git(folder, "add", "-A")
    _git(folder, "commit", "-q", "--allow-empty", "-m", "my work", author=author)
    subprocess.run(["git", "clone", "-q", "--bare", str(folder), str(target)], check=True)
    return target


def _raw_author(bare: Path, author: bytes) -> None:
    """A last commit whose author is `author` as it is (git commit itself would re-encode it as UTF-8)."""
    tree = subprocess.run(["git", "rev-parse", "HEAD^{tree}"], cwd=bare, check=True, capture_output=True).stdout.strip()
    commit = b"tree %s\nauthor %s <x@example.invalid> 0 +0000\ncommitter x <x@example.invalid> 0 +0000\n\nwork\n" % (tree, author)
    made = subprocess.run(["git", "hash-object", "-t", "commit", "-w", "--stdin"], cwd=bare, input=commit, check=True,
                          capture_output=True).stdout.strip()
    subprocess.run(["git", "update-ref", "HEAD", made.decode()], cwd=bare, check=True)


def test_a_submission_that_only_links_to_a_classmates_work_is_not_graded_as_theirs(workspace, tmp_path):
    """Door 4: the importer follows no link. Mallory's folder holds only a link to Bob's; Eve's entry is itself a link;
    Oscar's repository's only content is an absolute link to Bob's folder; Trudy's bare repository borrows Bob's
    objects through an absolute link (and Peggy's through alternates). Each would have been Bob's full marks."""
    import shutil

    from grader.classroom import bulk

    room = tmp_path / "class"
    room.mkdir()
    bob = workspace(1, solved=True).rename(room / "bob")
    (room / "mallory").mkdir()
    (room / "mallory" / "work").symlink_to("../bob")
    (room / "eve").symlink_to(bob)
    oscar = tmp_path / "oscar"
    oscar.mkdir()
    (oscar / "work").symlink_to(bob)
    _bare(oscar, room / "oscar.git")
    bob_git = _bare(workspace(1, solved=True), tmp_path / "bob.git")
    shutil.copytree(bob_git, room / "trudy.git", symlinks=True)
    shutil.rmtree(room / "trudy.git" / "objects")
    (room / "trudy.git" / "objects").symlink_to(bob_git / "objects")
    shutil.copytree(bob_git, room / "peggy.git", symlinks=True)
    shutil.rmtree(room / "peggy.git" / "objects")
    (room / "peggy.git" / "objects" / "info").mkdir(parents=True)
    (room / "peggy.git" / "objects" / "info" / "alternates").write_text(f"{bob_git / 'objects'}\n")
    (scratch := tmp_path / "scratch").mkdir()
    rows = {student.name: student for student in bulk.collect([str(room)], scratch, lesson=1)}
    assert set(rows) == {"bob", "eve", "work", "oscar", "trudy", "peggy"}  # "work": the link in mallory's folder
    assert rows["bob"].path == bob and not rows["bob"].problem
    for name in set(rows) - {"bob"}:
        assert rows[name].path is None, f"{name} would be graded as {rows[name].path}"
    assert "symbolic link (to ../bob)" in rows["work"].problem and "symbolic link" in rows["eve"].problem
    assert "not a Rover workspace" in rows["oscar"].problem
    assert "symbolic link (objects)" in rows["trudy"].problem and "alternates" in rows["peggy"].problem
    walter = tmp_path / "walter"  # a repository by URL whose .git is a file naming Bob's
    walter.mkdir()
    (walter / ".git").write_text(f"gitdir: {bob_git}\n")
    [by_url] = bulk.collect([walter.as_uri()], scratch, lesson=1)
    assert by_url.name == "walter" and by_url.path is None and ".git is a file or a link" in by_url.problem


def test_a_zip_whose_end_record_says_one_entry_is_counted_from_its_directory(tmp_path):
    """Door 4: entries are counted from the central directory, walked, not from the count the end record claims."""
    import struct
    import time
    import zipfile

    from grader.classroom import bulk

    archive = tmp_path / "flood.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        for index in range(60_035):
            bundle.writestr(f"f{index}", b"")
    data = bytearray(archive.read_bytes())
    end = data.rfind(b"PK\x05\x06")
    data[end + 8:end + 12] = struct.pack("<HH", 1, 1)  # this disk's and the total count: 1
    archive.write_bytes(bytes(data))
    (scratch := tmp_path / "scratch").mkdir()
    started = time.monotonic()
    [student] = bulk.collect([str(archive)], scratch)
    assert time.monotonic() - started < 1.0
    assert "more than 10,000 entries" in student.problem and not any(scratch.rglob("f1"))


def test_a_row_is_named_by_what_the_instructor_gave_and_the_author_stands_beside_it(workspace, tmp_path):
    """Door 4: Alice's repository says its author is "bob": she is still "alice", and Bob is not pushed to "bob (2)"."""
    from grader.classroom import bulk

    room = tmp_path / "class"
    room.mkdir()
    _bare(workspace(1).rename(tmp_path / "a"), room / "alice.git", author="bob")
    _bare(workspace(1).rename(tmp_path / "b"), room / "bob.git", author="bob")
    (scratch := tmp_path / "scratch").mkdir()
    rows = bulk.collect([str(room)], scratch, lesson=1)
    assert [(row.name, row.author) for row in rows] == [("alice", "bob"), ("bob", "bob")]
    assert all(row.path is not None and not row.problem for row in rows)


def test_names_that_are_not_utf8_stop_nothing_and_every_report_is_written(tmp_path):
    """Door 5: a git author with a byte that is not UTF-8 (it stopped the command before anyone was graded) and a
    folder name that is not UTF-8 (it killed the writers after grading): rows like any other, every report written."""
    from click.testing import CliRunner

    from grader.cli import main

    room = tmp_path / "class"
    room.mkdir()
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "notes.txt").write_text("no workspace here")
    _bare(plain, room / "zoe.git")
    _raw_author(room / "zoe.git", b"Zo\xeb \x1b[2J")
    os.mkdir(os.fsencode(room) + b"/ren\xe9e")
    reports = {kind: tmp_path / f"c.{kind}" for kind in ("csv", "html", "json")}
    result = CliRunner().invoke(main, ["class", "grade", str(room), "--lesson", "1",
                                       *(arg for kind, path in reports.items() for arg in (f"--{kind}", str(path)))])
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    rows = {row["name"]: row for row in json.loads(reports["json"].read_text(encoding="utf-8"))["students"]}
    assert set(rows) == {"zoe", "ren\ufffde"} and rows["zoe"]["author"] == "Zo\ufffd [2J"
    assert all("not a Rover workspace" in row["problem"] for row in rows.values())
    lines = list(csv.DictReader(reports["csv"].open(encoding="utf-8")))
    assert [line["student"] for line in lines] == ["ren\ufffde", "zoe"]
    assert "ren\ufffde" in reports["html"].read_text(encoding="utf-8")


def test_a_lone_surrogate_or_a_control_in_any_message_leaves_every_report_written(tmp_path):
    """Door 5: messages a student's code chose (a check's, an exception's) pass the one sanitizer in every writer."""
    from grader.classroom import bulk, class_report
    from grader.grading.runner import Outcome

    check = kit.lesson(0).checks[0]
    hostile = "boom \ud800\udfff\x1b[2J\u202e" + "x" * 100_000
    students = [bulk.Student("s\udcff", "/class/s\udcff", None, 0, [Outcome(check, "failed", hostile)]),
                bulk.Student("t", "/class/t", problem=hostile)]
    run = bulk.ClassRun(students, 1.0, "bwrap")
    for kind, write in (("csv", class_report.write_csv), ("html", class_report.write_html), ("json", class_report.write_json)):
        write(run, tmp_path / f"c.{kind}")
        text = (tmp_path / f"c.{kind}").read_text(encoding="utf-8")
        assert "\x1b" not in text and "\u202e" not in text and "\\ud800" not in text and len(text) < 60_000, kind
    data = json.loads((tmp_path / "c.json").read_text(encoding="utf-8"))
    assert data["students"][0]["name"] == "s\ufffd" and data["students"][1]["problem"].startswith("boom \ufffd\ufffd[2J")


def test_gradescope_results_pass_the_sanitizer_too(tmp_path):
    """Door 5 on the autograder's writer: a check message with a lone surrogate and an escape sequence."""
    from grader.classroom.autograder import publish

    results = {"score": 0, "output": "line one\nline two", "tests": [{"name": "read.numbered", "output": "x\ud800\x1b[2J\u202ey"}]}
    publish(results, tmp_path / "results.json")
    written = json.loads((tmp_path / "results.json").read_bytes().decode("utf-8"))
    assert written["tests"][0]["output"] == "x\ufffd[2Jy" and written["output"] == "line one\nline two"


def test_a_repository_whose_commondir_names_a_classmates_is_not_graded_as_theirs(workspace, tmp_path):
    """Door 4, hole A: Mallory's bare repository is only HEAD, empty objects and refs, and a `commondir` naming Bob's;
    git read Bob's refs and objects through it (16/16 for Mallory). Only HEAD, packed-refs, refs and objects are
    copied, and a commondir refuses the repository."""
    from grader.classroom import bulk

    room = tmp_path / "class"
    room.mkdir()
    _bare(workspace(1, solved=True), room / "bob.git")
    mallory = room / "mallory.git"
    (mallory / "objects").mkdir(parents=True)
    (mallory / "refs").mkdir()
    (mallory / "HEAD").write_bytes((room / "bob.git" / "HEAD").read_bytes())
    (mallory / "commondir").write_text("../bob.git\n")
    (scratch := tmp_path / "scratch").mkdir()
    rows = {student.name: student for student in bulk.collect([str(room)], scratch, lesson=1)}
    assert rows["bob"].path is not None and not rows["bob"].problem
    assert rows["mallory"].path is None and "commondir" in rows["mallory"].problem, rows["mallory"]


def test_a_fifo_in_a_repository_or_a_git_that_hangs_is_one_row_and_kills_all_it_started(workspace, tmp_path,
                                                                                      monkeypatch):
    """Door 4, hole B: a FIFO for packed-refs blocked git for the 120 s timeout, which then stopped the whole class
    with a traceback and left git-upload-pack processes blocked forever. A FIFO is never opened now (the copy takes
    regular files only), and a git that outlives its time is killed with its whole process group: one row."""
    import psutil

    from grader.classroom import bulk, importer

    room = tmp_path / "class"
    room.mkdir()
    _bare(workspace(1, solved=True), room / "bob.git")
    _bare(workspace(1), room / "slow.git")
    (room / "slow.git" / "packed-refs").unlink(missing_ok=True)
    os.mkfifo(room / "slow.git" / "packed-refs")
    (scratch := tmp_path / "scratch").mkdir()
    rows = {student.name: student for student in bulk.collect([str(room)], scratch, lesson=1)}
    assert rows["bob"].path is not None and not rows["bob"].problem
    assert rows["slow"].path is None and "packed-refs" in rows["slow"].problem and "regular" in rows["slow"].problem
    monkeypatch.setattr(importer, "GIT_SECONDS", 0.001)
    [late] = bulk.collect([str(room / "bob.git")], scratch, lesson=1)
    assert late.path is None and late.problem == "git took longer than 0.001 s"
    started = tmp_path / "started"
    assert importer.run_bounded(["sh", "-c", f"sleep 60 & echo $! > {started}; wait"], tmp_path, 0.5) is None
    child = int(started.read_text())

    def ended() -> bool:  # killed: gone, or a zombie; caught mid-exit (its pipes closed already) it can still read "running"
        try:
            return psutil.Process(child).status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True

    deadline = time.monotonic() + 5
    while not ended() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ended()


def test_a_git_bomb_is_refused_from_its_tree_before_a_file_is_written(tmp_path):
    """Door 4, hole C: a repository of a few KB whose tree names one blob many times checks out hundreds of MB (a
    192 KB one checked out 1 GB). The clone is made without checkout and its tree's sizes summed first."""
    from grader.classroom import bulk

    bomb = tmp_path / "class" / "bomb.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bomb)], check=True)
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=bomb, input=bytes(1 << 20), check=True,
                          capture_output=True).stdout.decode().strip()
    listing = "".join(f"100644 blob {blob}\tf{index}\n" for index in range(201))
    tree = subprocess.run(["git", "mktree"], cwd=bomb, input=listing, text=True, check=True, capture_output=True).stdout.strip()
    env = {**os.environ, "GIT_AUTHOR_NAME": "x", "GIT_COMMITTER_NAME": "x", "GIT_AUTHOR_EMAIL": "x@example.invalid",
           "GIT_COMMITTER_EMAIL": "x@example.invalid"}
    commit = subprocess.run(["git", "commit-tree", tree, "-m", "boom"], cwd=bomb, env=env, text=True, check=True,
                            capture_output=True).stdout.strip()
    subprocess.run(["git", "update-ref", "HEAD", commit], cwd=bomb, check=True)
    (scratch := tmp_path / "scratch").mkdir()
    [row] = bulk.collect([str(bomb)], scratch, lesson=1)
    assert row.path is None and row.problem == "the repository's files would take 201 MB, more than the 200 MB limit"
    assert not list(scratch.rglob("f0"))
