"""The Gradescope autograder, run as Gradescope runs it: setup.sh once, then run_autograder per submission.

A folder in /tmp stands in for /autograder (WORKSHOP_AUTOGRADER_ROOT); setup.sh installs the kit from the wheel in
the zip into a venv there, reusing the packages the running interpreter sees (a .pth file, no network), so this
passes in a fresh venv and in the system Python alike. As root, setup.sh also makes the unprivileged user student
code runs as (a throwaway name, removed afterwards). Not as root the user switch cannot happen: those tests skip,
and the rest run with an autograder built --unsafe-no-sandbox.
"""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import jsonschema
import pytest

from grader.classroom.autograder import build, find_rover
from grader.classroom.cleanup import end_user, remove_tree
from grader.course import kit
from tests.test_reports import RESULTS_SCHEMA

LESSON = 1
FORGED = {"score": 999, "tests": []}
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="the switch to an unprivileged user needs root (Gradescope runs as root)")


def _site_folders() -> str:
    """The folders of installed packages the running interpreter sees, venv or not."""
    return os.pathsep.join(entry for entry in sys.path if entry.endswith(("site-packages", "dist-packages")) and Path(entry).is_dir())


def _closed_above(path: Path) -> bool:
    """Is a folder above `path` one that other users cannot enter (pyenv under /root)?"""
    return any(not os.stat(folder).st_mode & stat.S_IXOTH for folder in path.resolve().parents)


def _reachable_prefix() -> list[str]:
    """As root, a command prefix that shows the running interpreter, its packages and the kit to the student user when
    they live in folders others cannot enter (pyenv under /root, a venv made by mktemp -d): a bwrap view with those
    folders opened, nothing changed on disk."""
    if os.geteuid() != 0:
        return []
    import grader

    opened: dict[Path, set[Path]] = {}
    for needed in (Path(sys.executable).resolve(), *map(Path, _site_folders().split(os.pathsep)), Path(grader.__file__).resolve()):
        closed = next((folder for folder in reversed(needed.parents) if not os.stat(folder).st_mode & stat.S_IXOTH), None)
        if closed is not None:
            opened.setdefault(closed, set()).add(needed.parents[len(needed.parents) - len(closed.parts) - 1])
    if not opened:
        return []
    view = ["bwrap", "--dev-bind", "/", "/"]
    for closed, insides in sorted(opened.items()):
        view += ["--perms", "0755", "--tmpfs", str(closed)]
        for inside in sorted(insides):
            view += ["--ro-bind", str(inside), str(inside)]
    return [*view, "--cap-add", "ALL", "--"]


pytestmark = pytest.mark.xdist_group("autograder")  # one worker builds the kit's /autograder (about 50 s) and grades every case

# The student user must reach the fake /autograder: not under the session's own temp folder, which is root's alone (0700).
OPEN_TMP = "/tmp" if os.geteuid() == 0 else None


@pytest.fixture(scope="module")
def installed():
    """An /autograder tree after Gradescope's image build: source/ unzipped, setup.sh run (as root: with a user)."""
    user = f"wsag{os.getpid() % 100000}" if os.geteuid() == 0 else ""
    private = [folder for folder in _site_folders().split(os.pathsep) if user and _closed_above(Path(folder))]
    if private:  # a venv (as the README and CI run the tests) keeps them in a folder the user can enter
        pytest.skip(f"this Python's packages ({private[0]}) are under a folder other users cannot enter: the student "
                    "user could not reuse them offline; run the tests in a venv")
    root = Path(tempfile.mkdtemp(prefix="workshop-autograder-", dir=OPEN_TMP))
    root.chmod(0o755)
    try:
        archive = build(LESSON, root / "autograder.zip", unsafe=not user)
        with zipfile.ZipFile(archive) as bundle:
            bundle.extractall(root / "source")
            modes = {info.filename: info.external_attr >> 16 for info in bundle.infolist()}
        for name in ("setup.sh", "run_autograder"):
            (root / "source" / name).chmod(modes[name])
        env = {**os.environ, "WORKSHOP_AUTOGRADER_ROOT": str(root), "WORKSHOP_AUTOGRADER_USER": user or "student",
               "WORKSHOP_AUTOGRADER_VENV_FLAGS": "--system-site-packages", "WORKSHOP_AUTOGRADER_SITE": _site_folders(),
               "PIP_NO_INDEX": "1", "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
        done = subprocess.run(["bash", str(root / "source" / "setup.sh")], env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        yield root, modes, archive, user
    finally:
        try:
            _remove_user(user)
        finally:
            remove_tree(root)


def _remove_user(user: str) -> None:
    import pwd

    if not user:
        return
    try:
        entry = pwd.getpwnam(user)
        end_user(entry.pw_uid, entry.pw_gid)
    except KeyError:
        pass
    finally:
        subprocess.run(["userdel", user], check=False, capture_output=True)


@pytest.fixture
def autograder(installed):
    """A fresh /autograder for one submission, sharing the installed kit; removed afterwards."""
    source, _, _, user = installed
    root = Path(tempfile.mkdtemp(prefix="workshop-autograder-run-", dir=OPEN_TMP))
    root.chmod(0o755)
    (root / "submission").mkdir()
    (root / "results").mkdir()
    (root / "source").symlink_to(source / "source")
    (root / "workshop-venv").symlink_to(source / "workshop-venv")
    shutil.copy(source / "source" / "run_autograder", root / "run_autograder")  # where Gradescope puts it
    yield root, user
    remove_tree(root)


def _start(autograder, **env) -> subprocess.Popen:
    root, user = autograder
    env = {**os.environ, "WORKSHOP_AUTOGRADER_ROOT": str(root), "WORKSHOP_AUTOGRADER_USER": user or "student", **env}
    if OPEN_TMP:  # as on Gradescope, the grading's temp folders where the student user can reach them
        env["TMPDIR"] = OPEN_TMP
    return subprocess.Popen([*_reachable_prefix(), str(root / "run_autograder")], cwd=root, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _grade(autograder, make_submission) -> dict:
    root, _ = autograder
    make_submission(root / "submission")
    running = _start(autograder)
    out, err = running.communicate(timeout=600)
    assert running.returncode == 0, err
    results = json.loads((root / "results" / "results.json").read_text())
    jsonschema.validate(results, RESULTS_SCHEMA)
    return results


def test_the_zip_holds_the_scripts_at_its_root_and_the_kit_as_a_wheel(installed):
    root, modes, archive, _ = installed
    names = zipfile.ZipFile(archive).namelist()
    [wheel] = [name for name in names if name.endswith(".whl")]
    assert set(names) == {"setup.sh", "run_autograder", wheel}
    assert all(modes[name] & stat.S_IXUSR for name in ("setup.sh", "run_autograder"))
    inside = set(zipfile.ZipFile(root / "source" / wheel).namelist())
    assert {"grader/cli.py", "grader/kit/copier.yml", "grader/kit/lessons/manifest.toml", "grader/kit/stash/stash/extract.py"} <= inside
    assert f"--lesson {LESSON}" in (root / "source" / "run_autograder").read_text()
    setup = (root / "source" / "setup.sh").read_text()
    assert setup.index("apt-get update") < setup.index("apt-get install") and "bubblewrap" in setup
    assert "useradd" in setup


@ROOT_ONLY
def test_setup_gives_the_student_user_a_python_it_can_run_or_refuses_saying_why(installed, tmp_path):
    root, _, _, user = installed
    venv_python = root / "workshop-venv" / "bin" / "python"
    ran = subprocess.run(["runuser", "-u", user, "--", str(venv_python), "-I", "-c", "import grader.cli"], capture_output=True, text=True)
    assert ran.returncode == 0, f"the student user cannot run the autograder's Python: {ran.stderr}"
    private = Path(tempfile.mkdtemp(prefix="workshop-private-", dir="/tmp"))  # a home of mode 700, as pyenv's in /root
    try:
        (private / "python3").symlink_to(Path(sys.executable).resolve())
        elsewhere = Path(tempfile.mkdtemp(prefix="workshop-autograder-", dir="/tmp"))
        shutil.copytree(root / "source", elsewhere / "source")
        env = {**os.environ, "WORKSHOP_AUTOGRADER_ROOT": str(elsewhere), "WORKSHOP_AUTOGRADER_USER": user, "PIP_NO_INDEX": "1",
               "WORKSHOP_AUTOGRADER_PYTHON": str(private / "python3"), "WORKSHOP_AUTOGRADER_SYSTEM_PYTHON": str(private / "python3")}
        done = subprocess.run(["bash", str(elsewhere / "source" / "setup.sh")], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 1, done.stderr
        assert f"the user {user} cannot run {private / 'python3'}" in done.stderr and "a folder above it is private" in done.stderr
        assert "setup.sh: refused:" in done.stderr and "WORKSHOP_AUTOGRADER_PYTHON" in done.stderr
        assert not (elsewhere / "workshop-venv").exists(), "refused before anything was installed"
    finally:
        remove_tree(private)
        remove_tree(elsewhere)


def test_a_passing_submission_earns_the_lessons_points(autograder, rendered):
    def submit(folder: Path) -> None:  # the whole workspace, zipped inside a folder of its own
        shutil.copytree(rendered(LESSON, True), folder / "my-workspace", ignore=shutil.ignore_patterns("stash"))

    results = _grade(autograder, submit)
    assert results["score"] == sum(check.points for check in kit.lesson(LESSON).checks), results["tests"][0]["output"][:600]
    assert all(test["status"] == "passed" for test in results["tests"])
    assert ("WITHOUT a sandbox" in results["output"]) == (not autograder[1])


def test_a_failing_submission_scores_zero_but_shows_what_still_passes(autograder, rendered):
    results = _grade(autograder, lambda folder: shutil.copytree(rendered(LESSON) / "rover", folder / "rover"))
    assert results["score"] == 0
    earlier = [test for test in results["tests"] if test["name"].startswith("lesson-0 ")]
    assert len(earlier) == len(kit.lesson(0).checks) and all(test["status"] == "passed" for test in earlier)
    failing = [test for test in results["tests"] if test["status"] == "failed"]
    assert failing and all(test["output"].startswith(("Failed:", "Error:", "Timed out:")) for test in failing)


ATTACK = '''
import json, os, pathlib, signal
FULL = {"score": 16, "output": "full marks", "tests": []}

def _ancestors():
    pid = os.getppid()
    while pid > 1:
        try:
            yield pid, open(f"/proc/{pid}/cmdline", "rb").read().split(b"\\0")
            pid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return

for pid, command in list(_ancestors()):
    if b"--root" in command:  # run_autograder: its --root names the results folder
        results = pathlib.Path(command[command.index(b"--root") + 1].decode()) / "results" / "results.json"
        try:
            results.write_text(json.dumps(FULL))
        except OSError:
            pass
for pid, command in list(_ancestors()):
    try:
        os.kill(pid, signal.SIGKILL)  # every grader it can reach
    except OSError:
        pass
'''


@ROOT_ONLY
def test_code_that_finds_the_autograder_writes_full_marks_and_kills_the_grader_scores_what_it_earned(autograder, rendered):
    """The issue's attack, from an unsolved lesson 1's rover/__init__.py (it runs at import). Relies on the user
    switch: the student user cannot write the results folder (root's, 0700) or kill root's run_autograder; killing
    the `workshop check` that runs as the student ends in a zero, never in the forged file."""
    def submit(folder: Path) -> None:
        shutil.copytree(rendered(LESSON) / "rover", folder / "rover")
        init = folder / "rover" / "__init__.py"
        init.write_text(init.read_text() + ATTACK)

    results = _grade(autograder, submit)
    assert results["score"] == 0 and results["output"] != "full marks"
    assert "could not be graded" in results["output"] or results["tests"], results["output"]


@ROOT_ONLY
def test_a_submission_cannot_borrow_the_kits_reference_solution(autograder, rendered):
    """The installed kit carries the reference solutions (rendering needs them); setup.sh makes them root's alone,
    so a stub that runs the solution's code at import scores what the stub earns: 0."""
    def submit(folder: Path) -> None:
        shutil.copytree(rendered(LESSON) / "rover", folder / "rover")
        read = folder / "rover" / "tools" / "read.py"
        read.write_text(read.read_text() + "\nimport pathlib, grader\ntry:\n    exec((pathlib.Path(grader.__file__).parent"
                        " / 'kit' / 'solutions' / 'rover' / 'tools' / 'read.py').read_text())\nexcept OSError:\n    pass\n")

    results = _grade(autograder, submit)
    assert results["score"] == 0 and results["tests"], results["output"]


HOSTILE = {
    "writes its own results.json": "(ROOT / 'results' / 'results.json').write_text(json.dumps(FORGED))\n",
    "blocks results.json with a folder": "(ROOT / 'results' / 'results.json').mkdir(parents=True, exist_ok=True)\n",
}


@pytest.mark.parametrize("attack", sorted(HOSTILE))
def test_a_hostile_submission_cannot_set_its_own_score(autograder, rendered, attack):
    """As root the student user cannot even reach results/; without root (--unsafe-no-sandbox) results.json is
    written last, over whatever the code left there."""
    root, _ = autograder

    def submit(folder: Path) -> None:
        shutil.copytree(rendered(LESSON) / "rover", folder / "rover")
        read = folder / "rover" / "tools" / "read.py"
        read.write_text(read.read_text() + "\nimport json, os, pathlib\n"  # runs when the grader imports the tool
                        f"ROOT = pathlib.Path(os.environ.get('WORKSHOP_AUTOGRADER_ROOT', {str(root)!r}))\n"
                        f"FORGED = {FORGED!r}\ntry:\n    {HOSTILE[attack]}except OSError:\n    pass\n")
        (folder / ".copier-answers.yml").write_text("lesson: 0\nsolved: true\n")  # ignored: only rover/ is used
        (folder / "rover" / "tools" / "secret.py").symlink_to("/etc/hostname")
        (folder.parent / "results" / "results.json").write_text(json.dumps(FORGED))  # left from before: cleared

    results = _grade(autograder, submit)
    assert results["score"] == 0 and results != FORGED
    assert {test["name"].split(" ")[0] for test in results["tests"]} == {"lesson-0", "lesson-1"}, "graded as lesson 1"


def test_a_zero_stands_in_results_json_until_the_grading_is_over(autograder, rendered):
    root, _ = autograder
    shutil.copytree(rendered(LESSON, True) / "rover", root / "submission" / "rover")
    init = root / "submission" / "rover" / "__init__.py"
    init.write_text(init.read_text() + "\nimport time\ntime.sleep(3)\n")
    running = _start(autograder)
    results = root / "results" / "results.json"
    deadline = time.monotonic() + 60
    while not results.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    early = json.loads(results.read_text())
    running.communicate(timeout=600)
    assert early["score"] == 0 and "did not finish" in early["output"]
    assert json.loads(results.read_text())["score"] == sum(check.points for check in kit.lesson(LESSON).checks)


@ROOT_ONLY
def test_without_its_user_the_autograder_refuses_in_one_line(autograder, rendered):
    root, _ = autograder
    shutil.copytree(rendered(LESSON, True) / "rover", root / "submission" / "rover")
    running = _start(autograder, WORKSHOP_AUTOGRADER_USER="no-such-user-here")
    out, err = running.communicate(timeout=300)
    assert running.returncode == 2 and err.count("\n") == 1 and "no user 'no-such-user-here'" in err, err
    results = json.loads((root / "results" / "results.json").read_text())
    assert results["score"] == 0 and results["output"].startswith("Not graded: no user")


def test_a_submission_without_rover_gets_a_clear_zero(autograder):
    results = _grade(autograder, lambda folder: (folder / "notes.txt").write_text("oops"))
    assert results["score"] == 0 and "No rover/ folder" in results["output"]


def test_rover_is_found_wherever_the_upload_put_it(tmp_path, rendered):
    shutil.copytree(rendered(LESSON) / "rover", tmp_path / "a" / "b" / "rover")
    shutil.copytree(rendered(LESSON) / "rover", tmp_path / "a" / "b" / "c" / "d" / "rover")
    assert find_rover(tmp_path) == tmp_path / "a" / "b" / "rover", "the shallowest wins"
    assert find_rover(tmp_path / "a" / "b" / "rover") == tmp_path / "a" / "b" / "rover", "or the upload is rover itself"
    (tmp_path / "a" / "loop").symlink_to(tmp_path / "a")
    (tmp_path / "z").mkdir()
    (tmp_path / "z" / "rover").symlink_to(tmp_path / "a" / "b" / "rover")
    assert find_rover(tmp_path) == tmp_path / "a" / "b" / "rover", "links are not followed, loops end"
    assert find_rover(tmp_path / "z") is None
