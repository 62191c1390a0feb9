"""The kit's own CI: the forge workflow (Linux and macOS, oldest and newest Python) and the multi-Python script."""
from __future__ import annotations

import re
import subprocess

import yaml

from grader.course import kit

WORKFLOW = kit.root() / ".github/workflows/kit.yml"


def workflow() -> dict:
    loaded = yaml.safe_load(WORKFLOW.read_text())
    loaded["on"] = loaded.pop(True, loaded.get("on"))  # YAML 1.1 reads the key `on` as true
    return loaded


def test_the_kits_workflow_runs_on_every_push_and_pull_request():
    assert {"push", "pull_request"} <= set(workflow()["on"])


def test_the_matrix_is_linux_and_macos_by_the_oldest_and_newest_python():
    job = workflow()["jobs"]["test"]
    matrix = job["strategy"]["matrix"]
    assert sorted(matrix["os"]) == ["macos-latest", "ubuntu-latest"]
    assert matrix["python"] == ["3.10", "3.13"], "versions are strings: YAML reads 3.10 as 3.1"
    oldest = re.search(r'requires-python = ">=(3\.\d+)"', (kit.root() / "pyproject.toml").read_text()).group(1)
    assert matrix["python"][0] == oldest, "the oldest Python tested is the oldest the kit accepts"
    assert job["runs-on"] == "${{ matrix.os }}" and job["strategy"]["fail-fast"] is False


def test_the_steps_set_up_python_bubblewrap_on_linux_the_kit_and_run_the_suite():
    steps = workflow()["jobs"]["test"]["steps"]
    uses = [step.get("uses", "") for step in steps]
    runs = [step.get("run", "") for step in steps]
    checkout = next(i for i, used in enumerate(uses) if used.startswith("actions/checkout@"))
    setup = next(i for i, used in enumerate(uses) if used.startswith("actions/setup-python@"))
    assert steps[setup]["with"]["python-version"] == "${{ matrix.python }}"
    bubblewrap = next(i for i, run in enumerate(runs) if "apt-get install" in run)
    assert "bubblewrap" in runs[bubblewrap] and steps[bubblewrap]["if"] == "runner.os == 'Linux'"
    install = next(i for i, run in enumerate(runs) if 'pip install -e ".[test]"' in run)
    suite = next(i for i, run in enumerate(runs) if run.strip() == "python -m pytest")
    assert checkout < setup < bubblewrap < install < suite
    assert "if" not in steps[install] and "if" not in steps[suite], "the suite runs on macOS too"


def test_ci_runs_the_student_path_on_every_python_and_its_scripts_parse():
    assert any(line.strip().startswith(".ci/pythons") for line in (kit.root() / ".ci/run").read_text().splitlines())
    script = (kit.root() / ".ci/pythons").read_text()
    assert "for version in 3.10 3.11 3.12 3.13" in script
    for name in ("run", "pythons"):
        subprocess.run(["bash", "-n", str(kit.root() / ".ci" / name)], check=True)
