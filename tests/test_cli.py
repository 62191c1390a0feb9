"""`workshop start` and `workshop check` as a student runs them, through click's CliRunner."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

from click.testing import CliRunner

from grader.course import kit
from grader.cli import main


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_start_renders_a_workspace_with_earlier_lessons_solved(tmp_path):
    target = tmp_path / "ws"
    result = run("start", "lesson-1", str(target))
    assert result.exit_code == 0, result.output
    assert "Lesson 1: read" in result.output
    assert (target / ".copier-answers.yml").read_text().count("lesson: 1") == 1
    assert (target / "rover/agent.py").read_bytes() == kit.lesson(0).solution.read_bytes()
    assert "NotImplementedError" in (target / "rover/tools/read.py").read_text()
    assert not (target / "rover/tools/bash.py").exists()
    assert (target / "stash/stash/extract.py").read_text().count("\n") == 22
    log = subprocess.run(["git", "log", "--oneline"], cwd=target, capture_output=True, text=True).stdout
    assert log.count("\n") == 1 and "Start lesson 1" in log
    status = subprocess.run(["git", "status", "--porcelain"], cwd=target, capture_output=True, text=True).stdout
    assert status == "", "everything rendered is in the first commit"


def test_start_solved_solves_the_current_lesson_too(tmp_path):
    assert run("start", "lesson-1", str(tmp_path / "ws"), "--solved").exit_code == 0
    assert (tmp_path / "ws/rover/tools/read.py").read_bytes() == kit.lesson(1).solution.read_bytes()


def test_start_defaults_the_folder_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run("start", "0").exit_code == 0
    assert (tmp_path / "rover-lesson-0/rover/agent.py").is_file()


def test_start_refuses_a_non_empty_folder_and_keeps_its_files(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    result = run("start", "lesson-0", str(tmp_path))
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and "not empty" in result.output
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_start_an_unknown_lesson_lists_the_lessons(tmp_path):
    result = run("start", "lesson-99", str(tmp_path / "ws"))
    assert result.exit_code == 2
    assert result.output.count("\n") == 1
    assert "lesson-0, lesson-1" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "ws").exists()


def test_check_json_on_a_fresh_lesson(workspace, monkeypatch):
    monkeypatch.chdir(workspace(1))
    result = run("check", "--json")
    assert result.exit_code == 1
    report = json.loads(result.output)
    assert set(report) == {"lesson", "passed", "score", "max_score", "checks"}
    assert report["lesson"] == 1 and report["passed"] is False
    loop, read = (
        [check for check in report["checks"] if check["lesson"] == number] for number in (0, 1)
    )
    assert all(check["status"] == "passed" and check["hints"] == [] for check in loop)
    assert all(check["status"] == "failed" and len(check["hints"]) >= 2 for check in read)
    assert report["score"] == len(loop) and report["max_score"] == len(loop) + len(read)
    assert set(report["checks"][0]) == {"id", "lesson", "title", "status", "message", "hints", "points"}


def test_check_passes_on_a_solved_workspace_and_writes_reports(workspace, monkeypatch, tmp_path):
    monkeypatch.chdir(workspace(1, solved=True))
    result = run("check", "--junit", str(tmp_path / "junit.xml"), "--gradescope", str(tmp_path / "gs.json"))
    assert result.exit_code == 0, result.output
    assert "All 20 checks pass" in result.output
    suite = ET.parse(tmp_path / "junit.xml").getroot()
    assert suite.get("tests") == "20" and suite.get("failures") == "0"
    gradescope = json.loads((tmp_path / "gs.json").read_text())
    assert gradescope["score"] == sum(test["max_score"] for test in gradescope["tests"]) == 11  # lesson 1's own checks


def test_check_table_names_the_failure_and_the_hint_command(workspace, monkeypatch):
    monkeypatch.chdir(workspace(1))
    result = run("check")
    assert result.exit_code == 1
    assert "read.numbered" in result.output and "workshop hint read.numbered" in result.output


def test_check_outside_a_workspace_is_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run("check")
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and "workshop start lesson-0" in result.output


def test_check_never_imports_copier_or_anthropic(workspace):
    root = workspace(1)
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "grader.cli", "check", "--json"], cwd=root,
                          capture_output=True, text=True, timeout=120)
    imported = {line.split("|")[-1].strip().split(".")[0] for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "click" in imported and "grader" in imported, "the probe should see the check's own imports"
    assert not imported & {"copier", "anthropic", "jinja2", "yaml"}, imported & {"copier", "anthropic", "jinja2", "yaml"}


def test_the_visible_workspace_tests_pass_when_solved_and_fail_on_the_stub(rendered, tmp_path):
    import shutil

    def pytest_in(root):
        return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider"], cwd=root, capture_output=True,
                              text=True, timeout=300, env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})

    last = len(kit.lessons()) - 1
    solved = pytest_in(shutil.copytree(rendered(last, True), tmp_path / "solved"))
    assert solved.returncode == 0, solved.stdout[-800:]
    stub = pytest_in(shutil.copytree(rendered(last), tmp_path / "stub"))
    assert stub.returncode == 1 and "test_write.py" in stub.stdout
