"""Grades that hold on every machine a class brings: the Linux extras off (macOS, a dev container), native Windows."""
from __future__ import annotations

import ast
import fnmatch
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader.course import kit

# The paths macOS and a dev container take: the process backend, no subreaper, PR_SET_PDEATHSIG or RLIMIT_AS, and
# workers spawned as fresh interpreters, never forked (grader.boundary.starting).
NO_LINUX_EXTRAS = {"WORKSHOP_SANDBOX": "process", "WORKSHOP_LINUX_EXTRAS": "0"}

# Modules allowed to name /proc: the sandbox's backends (bwrap mounts a fresh one; process counting lives there).
# Everything else asks psutil. Adjust the patterns here if the backends move.
PROC_ALLOWED = ("grader/boundary/backends/*.py",)


def check_json(folder: Path, **env: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "grader.cli", "check", "--json"], cwd=folder, capture_output=True,
                          text=True, timeout=300, env={**os.environ, **env})
    assert done.returncode in (0, 1), done.stderr[-2000:]
    return json.loads(done.stdout)


def verdicts(folder: Path, **env: str) -> tuple[dict, dict[str, str]]:
    """The report and each check's status; "the machine was too busy" is no verdict: graded again once, then left out."""
    for _ in range(2):
        report = check_json(folder, **env)
        busy = {entry["id"] for entry in report["checks"] if entry["status"] == "error" and "too busy" in entry["message"]}
        if not busy:
            break
    return report, {entry["id"]: entry["status"] for entry in report["checks"] if entry["id"] not in busy}


# The solved lesson 8 grades every check of lessons 0-8 on the solution; each stub, its own lesson's checks on a stub
# (bash and search, whose processes and ripgrep depend most on the extras, and the last lesson).
@pytest.mark.parametrize(("lesson", "solved"), [(8, True), (2, False), (5, False), (8, False)], ids=["8-solved", "2-stub", "5-stub", "8-stub"])
def test_verdicts_are_the_same_with_the_linux_extras_off(workspace, lesson, solved):
    folder = workspace(lesson, solved)
    for _ in range(2):  # a difference is looked at twice: a check that times a tool by the wall clock can be late once
        (usual, usual_statuses), (bare, bare_statuses) = verdicts(folder), verdicts(folder, **NO_LINUX_EXTRAS)
        assert bare["sandbox"] == "process", "WORKSHOP_SANDBOX=process is the backend that graded"
        both = usual_statuses.keys() & bare_statuses.keys()
        assert len(both) >= 0.9 * len(usual["checks"]), "too few checks got a verdict to compare"
        differ = {key: (usual_statuses[key], bare_statuses[key]) for key in both if usual_statuses[key] != bare_statuses[key]}
        if not differ:
            break
    assert differ == {}, "(usual, extras off)"
    passed = {status == "passed" for status in bare_statuses.values()}
    assert passed == ({True} if solved else {True, False}), "the solution passes every check, the stub fails some"


@pytest.mark.skipif(not shutil.which("bwrap"), reason="needs bubblewrap")
def test_a_sandbox_that_cannot_start_is_the_machines_fault_not_the_students(workspace, tmp_path):
    """bwrap that starts its probe but fails the real sandbox (a mount it cannot make): every check is an error that
    says so, with bwrap's own words, and none says the student's rover does not import."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "bwrap").write_text(f"#!/bin/sh\ncase \"$*\" in *' -- true'|--help) exec {shutil.which('bwrap')} \"$@\";; esac\n"
                                "echo \"bwrap: Can't mkdir parents for /x/python: No such file or directory\" >&2\nexit 1\n")
    (fake / "bwrap").chmod(0o755)
    report = check_json(workspace(1, True), WORKSHOP_SANDBOX="bwrap", PATH=f"{fake}{os.pathsep}{os.environ['PATH']}")
    assert {entry["status"] for entry in report["checks"]} == {"error"}
    message = report["checks"][0]["message"]
    assert "sandbox did not start" in message and "Can't mkdir parents for /x/python" in message, message
    assert "does not import" not in message and "not of your code" in message


def test_native_windows_gets_one_line_and_exit_2(monkeypatch, capsys):
    from grader import cli

    monkeypatch.setattr(sys, "platform", "win32")
    with pytest.raises(SystemExit) as stopped:
        cli.refuse_native_windows()
    assert stopped.value.code == 2
    said = capsys.readouterr().err
    assert len(said.strip().splitlines()) == 1 and "WSL2" in said and "dev container" in said


def test_the_windows_line_comes_before_any_command_is_imported():
    probe = ("import atexit, sys\n"
             "atexit.register(lambda: print(sorted(name for name in sys.modules if name == 'click' or name.startswith('grader.'))))\n"
             "sys.platform = 'win32'\n"
             "import grader.cli\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stdout.strip() == "[]", "nothing but the check ran before the refusal"
    assert "native Windows" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def proc_strings(source: str) -> list[int]:
    """Lines of code (not comments, not docstrings) with a string that names /proc."""
    tree = ast.parse(source)
    docstrings = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}
    return [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and "/proc" in node.value and id(node) not in docstrings]


def test_the_proc_scan_finds_a_read_and_ignores_prose():
    assert proc_strings('"""Counted in /proc once."""\n# /proc\nstate = open(f"/proc/{pid}/stat").read()\n') == [3]


def test_no_module_outside_the_backends_reads_proc():
    package = kit.root() / "grader"
    readers = {}
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(kit.root()).as_posix()
        if not any(fnmatch.fnmatch(relative, pattern) for pattern in PROC_ALLOWED):
            lines = proc_strings(path.read_text(encoding="utf-8"))
            if lines:
                readers[relative] = lines
    assert readers == {}, "ask psutil instead, or move the code into a backend (PROC_ALLOWED)"
