"""The CI workflow a workspace carries: valid, pinned to its lesson, and its `run:` steps work as written.

The steps run here as GitHub's runner runs them (`bash -e`, a job summary file, the job's env), skipping
the `uses:` actions; the kit is installed from a wheel of this kit into a venv that reuses the installed
dependencies (no network).
"""
from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from junitparser import JUnitXml

from grader.classroom.autograder import build_wheel
from grader.course import kit

WORKFLOW = ".github/workflows/grade.yml"
EXPRESSION = re.compile(r"\$\{\{\s*(vars|env)\.(\w+)\s*\}\}")


def _load(workspace: Path) -> dict:
    workflow = yaml.safe_load((workspace / WORKFLOW).read_text())
    workflow["on"] = workflow.pop(True, workflow.get("on"))  # YAML 1.1 reads a bare `on` as true
    return workflow


def _expand(text: str, variables: dict[str, str], env: dict[str, str]) -> str:
    expanded = EXPRESSION.sub(lambda match: (variables if match.group(1) == "vars" else env).get(match.group(2), ""), text)
    assert "${{" not in expanded, f"an expression this test cannot evaluate: {expanded}"
    return expanded


def _run_steps(workspace: Path, tmp_path: Path, variables: dict[str, str], path: str) -> list[tuple[str, int, str]]:
    """Every `run:` step of the job, in order, stopping at the first failure as the runner does."""
    [job] = _load(workspace)["jobs"].values()
    summary = tmp_path / "summary.md"
    env = {"PATH": path, "HOME": os.environ.get("HOME", str(tmp_path)), "GITHUB_STEP_SUMMARY": str(summary),
           "GITHUB_OUTPUT": str(tmp_path / "output.txt"),
           "PIP_NO_INDEX": "1", "TMPDIR": os.environ.get("TMPDIR", "/tmp"), "WORKSHOP_CACHE": os.environ["WORKSHOP_CACHE"]}
    for name, value in job.get("env", {}).items():
        env[name] = _expand(str(value), variables, env)
    done = []
    for step in job["steps"]:
        if "uses" in step:
            continue
        script = tmp_path / "step.sh"
        script.write_text(step["run"])
        ran = subprocess.run(["bash", "-e", str(script)], cwd=workspace, env=env, capture_output=True, text=True, timeout=600)
        done.append((_expand(step.get("name", ""), variables, env), ran.returncode, ran.stdout + ran.stderr))
        if ran.returncode:
            break
    return done


pytestmark = pytest.mark.xdist_group("workflow")  # one worker builds the wheel and the venv once for every test


@pytest.fixture(scope="module")
def kit_env(tmp_path_factory):
    """A venv the workflow's install step can pip-install the kit into, and the wheel to install. It sees the
    packages the running interpreter sees (a .pth file): `--system-site-packages` alone, made from inside a venv,
    would see the base Python's, not this venv's, and pip could not find the kit's dependencies offline."""
    folder = tmp_path_factory.mktemp("ci")
    wheel = build_wheel(folder)
    venv = folder / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=300)
    site = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    seen = [entry for entry in sys.path if entry.endswith(("site-packages", "dist-packages")) and Path(entry).is_dir()]
    (Path(site) / "workshop-offline.pth").write_text("\n".join(seen) + "\n")
    return str(wheel), f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"


def test_the_workflow_is_valid_and_pinned_to_the_workspaces_lesson(rendered):
    for lesson in (0, 3):
        workflow = _load(rendered(lesson))
        assert "push" in workflow["on"]
        [job] = workflow["jobs"].values()
        assert job["runs-on"] == "ubuntu-latest" and job["env"]["WORKSHOP_LESSON"] == str(lesson)
        uses = [step["uses"].split("@")[0] for step in job["steps"] if "uses" in step]
        assert uses == ["actions/checkout", "actions/setup-python", "dorny/test-reporter",
                        "classroom-resources/autograding-grading-reporter"]
        [classroom] = [step for step in job["steps"] if "autograding-grading-reporter" in step.get("uses", "")]
        runner = classroom["with"]["runners"]
        assert classroom["env"][f"{runner.upper()}_RESULTS"] == "${{ steps.grade.outputs.result }}", "the reporter reads RUNNER_RESULTS"
        assert job["name"] == "Autograding Tests", "the check run the reporter puts the points on"
        [grading] = [step for step in job["steps"] if "workshop check" in step.get("run", "")]
        assert '--lesson "$WORKSHOP_LESSON"' in grading["run"] and "--junit workshop-junit.xml" in grading["run"]
        [report] = [step for step in job["steps"] if step.get("uses", "").startswith("dorny/")]
        assert report["with"]["path"] == "workshop-junit.xml" and report["with"]["reporter"] == "java-junit"


def test_the_steps_grade_a_solved_workspace_and_write_the_summary(workspace, tmp_path, kit_env):
    wheel, path = kit_env
    root = workspace(1, solved=True)
    steps = _run_steps(root, tmp_path, {"WORKSHOP_KIT": wheel}, path)
    assert [(name, code) for name, code, _ in steps] == [("Install the workshop kit", 0), ("Grade lesson 1", 0)], steps
    assert shutil.which("workshop", path=path)
    summary = (tmp_path / "summary.md").read_text()
    total = len(kit.lesson(0).checks) + len(kit.lesson(1).checks)
    assert summary.startswith("## workshop check, lesson 1") and f"All {total} checks pass" in summary
    suites = list(JUnitXml.fromfile(str(root / "workshop-junit.xml")))
    assert sum(suite.tests for suite in suites) == total and all(suite.failures == suite.errors == 0 for suite in suites)
    classroom = _classroom_result(tmp_path)
    own = len(kit.lesson(1).checks)
    assert classroom["status"] == "pass" and classroom["max_score"] == own
    assert sum(test["score"] for test in classroom["tests"]) == own, "the reporter's points: lesson 1's own checks"


def test_a_failing_workspace_fails_the_job_but_still_reports(workspace, tmp_path, kit_env):
    wheel, path = kit_env
    root = workspace(1)
    answers = root / ".copier-answers.yml"
    answers.write_text(answers.read_text().replace("lesson: 1", "lesson: 0"))  # CI grades lesson 1 all the same
    steps = _run_steps(root, tmp_path, {"WORKSHOP_KIT": wheel}, path)
    assert steps[-1][:2] == ("Grade lesson 1", 1)
    assert "read.numbered" in (tmp_path / "summary.md").read_text()
    suites = {suite.name: suite for suite in JUnitXml.fromfile(str(root / "workshop-junit.xml"))}
    assert suites["lesson-1"].failures + suites["lesson-1"].errors > 0
    classroom = _classroom_result(tmp_path)
    assert classroom["status"] == "fail" and sum(test["score"] for test in classroom["tests"]) == 0
    assert {test["status"] for test in classroom["tests"]} <= {"pass", "fail", "error"}


def _classroom_result(tmp_path: Path) -> dict:
    """What the reporter step would decode from the grading step's `result` output."""
    [line] = [line for line in (tmp_path / "output.txt").read_text().splitlines() if line.startswith("result=")]
    return json.loads(base64.b64decode(line.removeprefix("result=")))


def test_without_the_kit_variable_the_install_step_says_what_to_set(workspace, tmp_path, kit_env):
    _, path = kit_env
    [(name, code, output)] = _run_steps(workspace(1), tmp_path, {}, path)
    assert code == 1 and "::error::Set the WORKSHOP_KIT variable" in output
