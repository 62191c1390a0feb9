"""The Gradescope autograder, run as Gradescope runs it: setup.sh once, then run_autograder per submission.

A temp dir stands in for /autograder (WORKSHOP_AUTOGRADER_ROOT); setup.sh installs the kit from the wheel in
the zip into a venv there, reusing this machine's installed dependencies (no network).
"""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import zipfile
from pathlib import Path

import jsonschema
import pytest

from grader.classroom.autograder import build, find_rover
from grader.course import kit
from tests.test_reports import RESULTS_SCHEMA

LESSON = 1
FORGED = {"score": 999, "tests": []}


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """An /autograder tree after Gradescope's image build: source/ unzipped, setup.sh run."""
    root = tmp_path_factory.mktemp("autograder")
    archive = build(LESSON, root / "autograder.zip")
    with zipfile.ZipFile(archive) as bundle:
        bundle.extractall(root / "source")
        modes = {info.filename: info.external_attr >> 16 for info in bundle.infolist()}
    for name in ("setup.sh", "run_autograder"):
        (root / "source" / name).chmod(modes[name])
    env = {**os.environ, "WORKSHOP_AUTOGRADER_ROOT": str(root), "WORKSHOP_AUTOGRADER_VENV_FLAGS": "--system-site-packages",
           "PIP_NO_INDEX": "1"}
    done = subprocess.run(["bash", str(root / "source" / "setup.sh")], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return root, modes, archive


def _grade(installed, tmp_path, make_submission) -> dict:
    source, *_ = installed
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    (root / "results").mkdir()
    (root / "source").symlink_to(source / "source")
    (root / "workshop-venv").symlink_to(source / "workshop-venv")
    make_submission(root / "submission")
    shutil.copy(root / "source" / "run_autograder", root / "run_autograder")  # where Gradescope puts it
    done = subprocess.run([str(root / "run_autograder")], cwd=root, env={**os.environ, "WORKSHOP_AUTOGRADER_ROOT": str(root)},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    results = json.loads((root / "results" / "results.json").read_text())
    jsonschema.validate(results, RESULTS_SCHEMA)
    return results


def test_the_zip_holds_the_scripts_at_its_root_and_the_kit_as_a_wheel(installed):
    root, modes, archive = installed
    names = zipfile.ZipFile(archive).namelist()
    [wheel] = [name for name in names if name.endswith(".whl")]
    assert set(names) == {"setup.sh", "run_autograder", wheel}
    assert all(modes[name] & stat.S_IXUSR for name in ("setup.sh", "run_autograder"))
    inside = set(zipfile.ZipFile(root / "source" / wheel).namelist())
    assert {"grader/cli.py", "grader/kit/copier.yml", "grader/kit/lessons/manifest.toml", "grader/kit/stash/stash/extract.py"} <= inside
    assert f"--lesson {LESSON}" in (root / "source" / "run_autograder").read_text()


def test_a_passing_submission_earns_the_lessons_points(installed, tmp_path, rendered):
    def submit(folder: Path) -> None:  # the whole workspace, zipped inside a folder of its own
        shutil.copytree(rendered(LESSON, True), folder / "my-workspace", ignore=shutil.ignore_patterns("stash"))

    results = _grade(installed, tmp_path, submit)
    assert results["score"] == sum(check.points for check in kit.lesson(LESSON).checks)
    assert all(test["status"] == "passed" for test in results["tests"])


def test_a_failing_submission_scores_zero_but_shows_what_still_passes(installed, tmp_path, rendered):
    results = _grade(installed, tmp_path, lambda folder: shutil.copytree(rendered(LESSON) / "rover", folder / "rover"))
    assert results["score"] == 0
    earlier = [test for test in results["tests"] if test["name"].startswith("lesson-0 ")]
    assert len(earlier) == len(kit.lesson(0).checks) and all(test["status"] == "passed" for test in earlier)
    failing = [test for test in results["tests"] if test["status"] == "failed"]
    assert failing and all(test["output"].startswith(("Failed:", "Error:", "Timed out:")) for test in failing)


HOSTILE = {
    "writes its own results.json": "(ROOT / 'results' / 'results.json').write_text(json.dumps(FORGED))\n",
    "blocks results.json with a folder": "(ROOT / 'results' / 'results.json').mkdir(parents=True, exist_ok=True)\n",
}


@pytest.mark.parametrize("attack", sorted(HOSTILE))
def test_a_hostile_submission_cannot_set_its_own_score(installed, tmp_path, rendered, attack):
    def submit(folder: Path) -> None:
        shutil.copytree(rendered(LESSON) / "rover", folder / "rover")
        read = folder / "rover" / "tools" / "read.py"
        read.write_text(read.read_text() + "\nimport json, os, pathlib\n"  # runs when the grader imports the tool
                        f"ROOT = pathlib.Path(os.environ.get('WORKSHOP_AUTOGRADER_ROOT', '/autograder'))\n"
                        f"FORGED = {FORGED!r}\n(ROOT / 'attack-ran').touch()\n{HOSTILE[attack]}")
        (folder / ".copier-answers.yml").write_text("lesson: 0\nsolved: true\n")  # ignored: only rover/ is used
        (folder / "rover" / "tools" / "secret.py").symlink_to("/etc/hostname")
        (folder.parent / "results" / "results.json").write_text(json.dumps(FORGED))  # left from before: cleared

    results = _grade(installed, tmp_path, submit)
    assert (tmp_path / "autograder" / "attack-ran").exists(), "the attack did run while grading"
    assert results["score"] == 0 and results != FORGED
    assert {test["name"].split(" ")[0] for test in results["tests"]} == {"lesson-0", "lesson-1"}, "graded as lesson 1"


def test_a_submission_without_rover_gets_a_clear_zero(installed, tmp_path):
    results = _grade(installed, tmp_path, lambda folder: (folder / "notes.txt").write_text("oops"))
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
