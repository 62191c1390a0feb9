"""The side's `python`: a test run is replayed only when everything it depends on repeats (grader.boundary.replays)."""
from __future__ import annotations

import concurrent.futures
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from grader.boundary import replays

pytestmark = pytest.mark.skipif(not all(shutil.which(tool) for tool in ("bash", "flock", "sha256sum", "find")),
                                reason="the shim replays only where bash, flock, sha256sum and find are")

# A stand-in for the real Python: counts its runs, and says what the test asks of it through the tree's files.
FAKE = """#!/bin/bash
echo run >> "$RUNS"
[[ -f say.txt ]] && cat say.txt
[[ -f err.txt ]] && cat err.txt >&2
[[ -f sleep.txt ]] && sleep "$(<sleep.txt)"
echo "args: $*"
exit "$(cat code.txt 2>/dev/null || echo 1)"
"""


@pytest.fixture
def side(tmp_path: Path):
    real = tmp_path / "real"
    real.mkdir()
    (real / "python").write_text(FAKE)
    (real / "python").chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    path = replays.install(str(home), f"{real}{os.pathsep}{os.environ['PATH']}")
    tree = tmp_path / "stash"
    (tree / "tests").mkdir(parents=True)
    (tree / "tests" / "test_a.py").write_text("def test_a():\n    assert True\n")
    runs = tmp_path / "runs"

    def python(*args: str, cwd: Path = tree, **env: str) -> subprocess.CompletedProcess:
        return subprocess.run(["python", *args], cwd=cwd, capture_output=True, text=True,
                              env={**os.environ, "PATH": path, "RUNS": str(runs), "TMPDIR": env.pop("TMPDIR", "/tmp"), **env})

    python.tree, python.runs = tree, lambda: len(runs.read_text().split()) if runs.exists() else 0
    return python


def test_the_same_run_twice_runs_once_and_says_the_same(side) -> None:
    first = side("-m", "pytest", "-q")
    second = side("-m", "pytest", "-q", TMPDIR="/elsewhere")  # another check's temp folder: the same run
    assert side.runs() == 1
    assert (second.stdout, second.stderr, second.returncode) == (first.stdout, first.stderr, 1) and "args: -m pytest -q" in first.stdout


def test_anything_that_differs_runs_again(side) -> None:
    side("-m", "pytest", "-q")
    (side.tree / "tests" / "test_a.py").write_text("def test_a():\n    assert False\n")  # a file's content
    side("-m", "pytest", "-q")
    side("-m", "pytest", "-v")  # the arguments
    side("-m", "pytest", "-v", PYTHONPATH="/somewhere")  # the environment
    (side.tree / "tests" / "test_a.py").chmod(0o600)  # a mode
    side("-m", "pytest", "-v", PYTHONPATH="/somewhere")
    assert side.runs() == 5


def test_what_is_never_replayed(side) -> None:
    side("-c", "print(1)")
    side("-c", "print(1)")  # not a test run
    assert side.runs() == 2
    (side.tree / "err.txt").write_text("a warning\n")
    assert [side("-m", "pytest").stderr for _ in range(2)] == ["a warning\n"] * 2  # it wrote to stderr
    (side.tree / "err.txt").unlink()
    (side.tree / "code.txt").write_text("2")
    side("-m", "pytest")
    side("-m", "pytest")  # pytest's "interrupted": not a verdict on the tree
    (side.tree / "code.txt").unlink()
    (side.tree / "say.txt").write_text(f"rootdir: {side.tree}\n")
    side("-m", "pytest")
    side("-m", "pytest")  # its output names its own folder, which differs from check to check
    (side.tree / "say.txt").unlink()
    (side.tree / "__pycache__").mkdir()
    side("-m", "pytest")
    side("-m", "pytest")  # bytecode the hash does not see
    (side.tree / "__pycache__").rmdir()
    (side.tree / "link").symlink_to("/etc/hostname")
    side("-m", "pytest")
    side("-m", "pytest")  # a link: what it points at is outside the hash
    assert side.runs() == 12  # six pairs, every one run twice


def test_runs_that_start_together_run_once(side) -> None:
    (side.tree / "sleep.txt").write_text("0.5")  # the first still running when the others ask
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        outputs = list(pool.map(lambda _: side("-m", "pytest").stdout, range(3)))
    assert side.runs() == 1 and len(set(outputs)) == 1


def test_no_python_or_no_bash_leaves_the_path_alone(tmp_path: Path) -> None:
    assert replays.install(str(tmp_path), str(tmp_path / "empty")) == str(tmp_path / "empty")
    assert not (tmp_path / ".workshop").exists()
