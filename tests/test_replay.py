"""The side's replaying `python` (grader.boundary.replay): a test run on the same arguments, environment and files runs
once a grading; anything else is the real Python."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from grader.boundary import replay
from grader.boundary.runfolder import MARK
from grader.grading.lab import TEST_RUN

pytestmark = pytest.mark.skipif(not all(shutil.which(tool) for tool in ("sha256sum", "flock", "find")),
                                reason="the replaying script needs GNU find, sha256sum and flock (elsewhere it is the real Python)")

COUNTER = """
import os, pathlib

def test_counts():
    counter = pathlib.Path(os.environ["RUNS_COUNTER"])  # outside the tree: a replay leaves it alone
    counter.write_text(str(int(counter.read_text() or 0) + 1) if counter.exists() else "1")
    assert os.environ.get("SHOULD_FAIL") != "1"
"""


@pytest.fixture
def side(tmp_path, monkeypatch):
    monkeypatch.setattr(replay, "WAIT", 60)  # a loaded machine's first run may take longer than the grader's 3 s
    folder = tmp_path / "replay"
    folder.mkdir()
    replay.install(folder, TEST_RUN, {}, MARK)
    counter = tmp_path / "counter"
    env = {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}", "RUNS_COUNTER": str(counter), "HOME": str(tmp_path),
           "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1", "LANG": "C.UTF-8"}

    def tree(name: str, test: str = COUNTER) -> Path:
        where = tmp_path / name
        (where / "tests").mkdir(parents=True)
        (where / "tests" / "test_it.py").write_text(test)
        return where

    def run(where: Path, *args: str, **more: str) -> subprocess.CompletedProcess:
        return subprocess.run(["sh", "-c", 'python "$@"', "python", *(args or ("-m", "pytest", "-v", "-p", "no:cacheprovider"))],
                              cwd=where, env={**env, **more, "TMPDIR": str(where)}, capture_output=True, text=True, timeout=60)

    def runs() -> int:
        return int(counter.read_text()) if counter.exists() else 0

    return tree, run, runs


def test_the_same_tests_on_the_same_files_run_once_and_show_this_folder(side):
    tree, run, runs = side
    first, second = tree("check-1"), tree("check-22")
    ran = run(first)
    again = run(second)
    assert runs() == 1, "the second run, on identical files, is the first one's output again"
    assert ran.returncode == again.returncode == 0
    assert f"rootdir: {first}" in ran.stdout and f"rootdir: {second}" in again.stdout, "each shows its own folder"
    assert again.stdout == ran.stdout.replace(str(first), str(second))


def test_a_changed_file_another_argument_or_environment_runs_for_real(side):
    tree, run, runs = side
    run(tree("a"))
    changed = tree("b")
    (changed / "tests" / "test_it.py").write_text(COUNTER + "\n# one more line\n")
    run(changed)
    assert runs() == 2
    run(tree("c"), "-m", "pytest", "-q", "-p", "no:cacheprovider")
    assert runs() == 3
    failed = run(tree("d"), SHOULD_FAIL="1")
    assert runs() == 4 and failed.returncode == 1, "an environment the first run did not have is a new run"
    replayed = run(tree("e"), SHOULD_FAIL="1")
    assert runs() == 4 and replayed.returncode == 1 and "1 failed" in replayed.stdout, "a failing run replays with its status"


def test_a_run_that_changes_its_folder_is_never_replayed(side):
    tree, run, runs = side
    writes = COUNTER + "\ndef test_writes():\n    pathlib.Path('made-by-the-tests').write_text('x')\n"
    for name in ("a", "b"):
        run(tree(name, writes))
    assert runs() == 2, "a replay would not make the file the tests make"


def test_a_forged_record_is_never_a_command(side, tmp_path):
    """A record's .cwd goes into the script's sed command: one that is not a plain absolute path (sed's `e` flag runs
    text as a command; an attack helper ran `id` so) makes the script run the tests for real, never replay it."""
    tree, run, runs = side
    run(tree("a"))
    [cwd] = [path for path in (tmp_path / "replay").iterdir() if path.name.endswith(".cwd")]
    cwd.write_text(f"^|echo INJECTED >{tmp_path / 'ran'} #|e;s|zzz")
    again = run(tree("b"))
    assert runs() == 2 and again.returncode == 0 and not (tmp_path / "ran").exists()
    assert "INJECTED" not in again.stdout + again.stderr


def test_anything_but_pytest_is_the_real_python(side):
    tree, run, runs = side
    where = tree("a")
    for _ in range(2):
        said = run(where, "-c", "import os, sys; print(sys.executable, os.getpid())")
        assert said.returncode == 0 and said.stdout.split()[0] == sys.executable
    assert run(where, "-c", "print(1)").stdout != run(where, "-c", "print(2)").stdout


def test_a_killed_run_leaves_no_record_and_dies_of_the_same_signal(side, tmp_path):
    tree, run, runs = side
    dies = "import os, signal\n\ndef test_dies():\n    os.kill(os.getpid(), signal.SIGKILL)\n"
    for name in ("a", "b"):
        died = subprocess.run([str(tmp_path / "replay" / "python"), "-m", "pytest", "-v", "-p", "no:cacheprovider"],
                              cwd=tree(name, dies), capture_output=True, timeout=60, env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
        assert died.returncode == -9, "killed by SIGKILL, as the real Python was (a bash tool says which signal)"
    assert not [name for name in os.listdir(tmp_path / "replay") if name.endswith(".code")]


def test_a_run_that_reaches_outside_its_folder_or_prints_much_is_not_recorded(side, tmp_path, monkeypatch):
    tree, run, runs = side
    for name in ("a", "b"):  # a link: what it points to is not in the key
        where = tree(name)
        (where / "tests" / "link").symlink_to(tmp_path / "counter")
        run(where)
    assert runs() == 2
    (tmp_path / "above").mkdir()
    (tmp_path / "above" / "pytest.ini").write_text("[pytest]\naddopts = -k nothing\n")
    for name in ("above/a", "above/b"):  # a configuration above the folder: its rootdir is not the folder
        said = run(tree(name))
        assert "1 deselected" in said.stdout
    assert not [name for name in os.listdir(tmp_path / "replay") if name.endswith(".code")], "nothing recorded"
    monkeypatch.setattr(replay, "LIMIT", 100)
    (tmp_path / "replay" / "python").unlink()
    replay.install(tmp_path / "replay", TEST_RUN, {}, MARK)
    for name in ("c", "d"):
        run(tree(name))
    assert runs() == 4, "a run that printed more than LIMIT bytes is not recorded"


def test_stdout_and_stderr_as_one_stream_keep_their_order(side, tmp_path):
    """A bash tool that reads 2>&1 sees the lines in the order they were written, run or replayed."""
    tree, run, runs = side
    interleaves = ("import os, sys\n"  # a pytest of the folder's own (python -m puts the folder first on sys.path)
                   "counter = os.environ['RUNS_COUNTER']\n"
                   "open(counter, 'a').close(); n = int(open(counter).read() or 0); open(counter, 'w').write(str(n + 1))\n"
                   "print('rootdir:', os.getcwd(), flush=True)\n"
                   "for n in range(3):\n"
                   "    print('out', n, flush=True); sys.stderr.write(f'err {n}\\n'); sys.stderr.flush()\n")
    said = []
    for name in ("a", "b"):
        where = tree(name)
        (where / "pytest.py").write_text(interleaves)
        said.append(subprocess.run([str(tmp_path / "replay" / "python"), "-m", "pytest", "-v", "-p", "no:cacheprovider"],
                                   cwd=where, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60,
                                   env={**os.environ, "RUNS_COUNTER": str(tmp_path / "counter"), "PYTHONDONTWRITEBYTECODE": "1"}
                                   ).stdout.splitlines()[1:])  # no __pycache__, as on the side: the run leaves its folder as it was
    assert runs() == 1
    assert said[0] == said[1] == ["out 0", "err 0", "out 1", "err 1", "out 2", "err 2"]


def test_the_same_run_under_way_is_waited_for(side):
    tree, run, runs = side
    slow = COUNTER.replace("def test_counts():", "import time\n\ndef test_counts():\n    time.sleep(0.5)")
    folders = [tree(f"check-{n}", slow) for n in range(3)]
    done = []
    threads = [threading.Thread(target=lambda where=where: done.append(run(where))) for where in folders]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert runs() == 1 and [result.returncode for result in done] == [0, 0, 0]


def test_a_grading_runs_the_same_scenario_tests_once_and_the_next_grading_not_at_all(rendered, monkeypatch):
    """The side's workers find the script first: lesson 2's run of pristine stash is replayed for lesson 5's first; a
    second grading in the same process (watch, after a save) replays every run from the first one's records."""
    from grader.boundary.runfolder import RunFolder
    from grader.course import kit
    from grader.grading.runner import run_checks

    records, close = [], RunFolder.close

    def counted(folder):
        if folder.replay:
            records.append({name: (folder.replay / name).read_text() for name in os.listdir(folder.replay) if name.endswith(".code")})
        close(folder)

    monkeypatch.setattr(RunFolder, "close", counted)
    checks = [check for lesson in (2, 5) for check in kit.lesson(lesson).checks if check.id.endswith("stash-scenario")]
    replays: dict[str, str] = {}  # what watch keeps between saves
    for _ in range(2):
        outcomes = run_checks(rendered(5, True), checks, jobs=1, replays=replays)
        assert [outcome.status for outcome in outcomes] == ["passed", "passed"]
    assert len(records[0]) == 2, "three runs of stash's tests on two trees: pristine, then both bugs fixed"
    assert records[1] == records[0], "the second grading made no record of its own: it ran no test for real"


def test_a_one_off_grading_reads_no_record_the_side_wrote(rendered, monkeypatch):
    """`workshop check` grades once: it has no next run to carry records to, so it reads none of them (files the
    student's side wrote, read for nothing)."""
    from grader.boundary.runfolder import RunFolder
    from grader.course import kit
    from grader.grading.runner import run_checks

    reads, replays = [], RunFolder.replays
    monkeypatch.setattr(RunFolder, "replays", lambda folder: reads.append(folder) or replays(folder))
    checks = list(kit.lesson(0).checks)[:1]
    assert run_checks(rendered(0, True), checks, jobs=1)[0].passed and reads == []
    carried: dict[str, str] = {}
    assert run_checks(rendered(0, True), checks, jobs=1, replays=carried)[0].passed and len(reads) == 1


def test_only_whole_records_are_carried_to_the_next_run(tmp_path):
    from grader.boundary.runfolder import RunFolder

    first = RunFolder(replayed=TEST_RUN)
    try:
        key = "a" * 64
        for name, text in {f"{key}.code": "1 7.8\n", f"{key}.7.8.out": "rootdir: x\n", f"{key}.7.8.err": "", f"{key}.7.8.cwd": "/x",
                           f"{'b' * 64}.code": "0 1.2\n", f"{'b' * 64}.1.2.out": "half\n", "notes.txt": "not a record"}.items():
            (first.replay / name).write_text(text)
        (first.replay / f"{'c' * 64}.code").write_text("0 3.4\n")
        for part in ("out", "cwd"):
            (first.replay / f"{'c' * 64}.3.4.{part}").symlink_to(tmp_path)
        (first.replay / f"{'c' * 64}.3.4.err").write_text("")
        for name, text in {f"{'d' * 64}.code": "0 5.6\n", f"{'d' * 64}.5.6.out": "x\n", f"{'d' * 64}.5.6.err": "",
                           f"{'d' * 64}.5.6.cwd": "^|id #|e;s|zzz",  # not a plain path: it would reach the script's sed
                           f"{'f' * 64}.code": "0 7.7\n", f"{'f' * 64}.7.7.out": "\udcff\n", f"{'f' * 64}.7.7.err": "",
                           f"{'f' * 64}.7.7.cwd": "/x",  # not UTF-8
                           f"{'9' * 64}.code": "9 8.8\n", f"{'9' * 64}.8.8.out": "x\n", f"{'9' * 64}.8.8.err": "",
                           f"{'9' * 64}.8.8.cwd": "/x"}.items():  # not one of pytest's statuses
            (first.replay / name).write_bytes(text.encode("utf-8", "surrogateescape"))
        kept = first.replays()
    finally:
        first.close()
    assert sorted(kept) == sorted([f"{key}.code", f"{key}.7.8.out", f"{key}.7.8.err", f"{key}.7.8.cwd"]), "no part missing, no link"
    second = RunFolder(replayed=TEST_RUN, replays={**kept, "../escape": "x"})
    try:
        assert (second.replay / f"{key}.7.8.out").read_text() == "rootdir: x\n"
        assert not (second.path / "escape").exists() and "../escape" not in os.listdir(second.replay)
    finally:
        second.close()


def test_what_is_carried_is_bounded_however_many_records_the_side_makes(monkeypatch):
    """Hostile code that plants thousands of tiny records must not fill the next run's folder, nor cost the grader
    time at every save (an attack helper carried 22,708 files and failed every later run of correct code)."""
    from grader.boundary.runfolder import RunFolder

    monkeypatch.setattr(replay, "KEPT", 64 << 10)
    first = RunFolder(replayed=TEST_RUN)
    try:
        for n in range(3000):
            key = f"{n:064x}"
            for name, text in {f"{key}.code": "0 1.1\n", f"{key}.1.1.out": "x" * 100, f"{key}.1.1.err": "", f"{key}.1.1.cwd": "/x"}.items():
                (first.replay / name).write_text(text)
        reads, read = [], RunFolder.read_bytes
        monkeypatch.setattr(RunFolder, "read_bytes", lambda folder, path, limit: reads.append(path) or read(folder, path, limit))
        kept = first.replays()
    finally:
        first.close()
    assert len(kept) == 4 * replay.RECORDS, f"{replay.RECORDS} whole records at most, got {len(kept)} files"
    assert len(reads) <= 4 * 2 * replay.RECORDS, f"the grader read {len(reads)} of the 12,000 files"
    big = {f"{'e' * 64}.code": "0 2.2\n", f"{'e' * 64}.2.2.out": "y" * (128 << 10), f"{'e' * 64}.2.2.err": "", f"{'e' * 64}.2.2.cwd": "/x"}
    second = RunFolder(replayed=TEST_RUN)
    try:
        for name, text in big.items():
            (second.replay / name).write_text(text)
        assert second.replays() == {}, "a record past the bytes it may read is not carried"
        for n, size in enumerate(((64 << 10) - 11, 5)):  # the first leaves 3 bytes: the next must not be read past them
            key = f"{n:064x}"
            for name, text in {f"{key}.code": f"0 {n}.1\n", f"{key}.{n}.1.out": "z" * size, f"{key}.{n}.1.err": "", f"{key}.{n}.1.cwd": "/x"}.items():
                (second.replay / name).write_text(text)
        assert len(second.replays()) == 4, "one whole record, and never a read past what is left (it raised, once)"
    finally:
        second.close()


def test_the_students_next_check_replays_what_the_last_one_recorded(workspace, monkeypatch, tmp_path):
    """A plain `workshop check` keeps its records in the kit's cache for the next check of that workspace; a grade that
    counts (a report for Gradescope, CI or JUnit, `--lesson`) neither reads nor writes them."""
    from click.testing import CliRunner

    from grader.cli import main
    from grader.commands import check
    from grader.grading import replays
    from grader.grading.grade import Grade

    given: list = []

    def grade(found, only=None, on_outcome=None, on_start=None, replays=None):  # the grading itself is tested above
        given.append(None if replays is None else dict(replays))
        if replays is not None:
            replays.update({f"{'d' * 64}.code": "0 1.2\n"})
        return Grade(found.lesson, [])

    root = workspace(0, solved=True)
    monkeypatch.setenv("WORKSHOP_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(check, "grade", grade)
    monkeypatch.chdir(root)
    for arguments in (["check", "--json"], ["check", "--json"], ["check", "--json", "--lesson", "0"],
                      ["check", "--json", "--gradescope", str(tmp_path / "gs.json")]):
        assert CliRunner().invoke(main, arguments).exit_code == 0
    assert given == [{}, {f"{'d' * 64}.code": "0 1.2\n"}, None, None]
    assert replays.load(root) == {f"{'d' * 64}.code": "0 1.2\n"}


def test_kept_records_are_read_whole_or_not_at_all(tmp_path, monkeypatch):
    from grader.grading import replays

    monkeypatch.setenv("WORKSHOP_CACHE", str(tmp_path))
    kept = tmp_path / "replays" / replays._name(tmp_path)
    replays.save(tmp_path, {"a": "b"})
    assert replays.load(tmp_path) == {"a": "b"} and os.listdir(tmp_path / "replays") == [kept.name], "written whole, then moved"
    for broken in ('{"a": 1}', "[1]", "{not json", "[" * 200_000, '{"a": "\\ud800"}', "x" * (replays.MAX_BYTES + 1)):
        kept.write_text(broken)
        assert replays.load(tmp_path) == {}, broken[:20]
    replays.save(tmp_path, {"a": "\x01" * (replays.MAX_BYTES // 5)})
    assert not kept.exists(), "records that would not be read back are not written"
    replays.save(tmp_path, {"a": "b"})
    kept.chmod(0o666)
    assert replays.load(tmp_path) == {}, "a file others may write is not read"
    replays.save(tmp_path, {"a": "b"})
    kept.rename(tmp_path / "planted.json")
    kept.symlink_to(tmp_path / "planted.json")
    assert replays.load(tmp_path) == {}, "a link is not followed"
    replays.save(tmp_path, {})
    assert not os.path.lexists(kept) and (tmp_path / "planted.json").exists(), "no records: no file (the link, not its target)"


def test_a_cache_folder_that_is_not_ours_alone_is_never_used(tmp_path, monkeypatch):
    """A WORKSHOP_CACHE shared by mistake: a classmate's replays/ folder (open to all, or a link she made to a folder of
    the victim's) is neither read nor written."""
    from grader.grading import replays

    monkeypatch.setenv("WORKSHOP_CACHE", str(tmp_path))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (tmp_path / "replays").symlink_to(elsewhere)
    replays.save(tmp_path, {"a": "b"})
    assert os.listdir(elsewhere) == [] and replays.load(tmp_path) == {}
    (tmp_path / "replays").unlink()
    (tmp_path / "replays").mkdir()
    (tmp_path / "replays").chmod(0o777)
    (tmp_path / "replays" / replays._name(tmp_path)).write_text('{"a": "b"}')
    replays.save(tmp_path, {"c": "d"})
    assert replays.load(tmp_path) == {} and (tmp_path / "replays" / replays._name(tmp_path)).read_text() == '{"a": "b"}'
