"""A built wheel carries the whole course: lessons, template, stash and solutions, inside the package."""
from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from grader.course import kit

REPO = Path(__file__).resolve().parent.parent


pytestmark = pytest.mark.xdist_group("packaging")  # one worker builds the wheel once for both tests


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(REPO)],
                           capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr
    [path] = out.glob("workshop_kit-*.whl")
    return path


def test_the_wheel_holds_every_course_folder(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for lesson in kit.lessons():
        for path in (lesson.text, lesson.script, lesson.stub, lesson.solution):
            assert f"grader/kit/{path.relative_to(kit.root()).as_posix()}" in names
    assert {"grader/kit/copier.yml", "grader/kit/stash/stash/extract.py", "grader/kit/lessons/manifest.toml"} <= names
    assert not any("__pycache__" in name for name in names)


def test_an_installed_wheel_starts_and_checks_a_lesson(wheel, tmp_path):
    target = tmp_path / "site"
    installed = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
                               capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr
    env = {**os.environ, "PYTHONPATH": str(target)}
    script = (
        "import sys; from grader.course import kit; from grader.cli import main; "
        "assert str(kit.root()).startswith(sys.argv[1]), kit.root(); "
        "main(['start', 'lesson-1', sys.argv[2]])"
    )
    started = subprocess.run([sys.executable, "-c", script, str(target), str(tmp_path / "ws")],
                             capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert started.returncode == 0, started.stderr
    checked = subprocess.run([sys.executable, "-m", "grader.cli", "check", "--json"], cwd=tmp_path / "ws",
                             capture_output=True, text=True, env=env, timeout=120)
    assert checked.returncode == 1, checked.stderr
    assert '"lesson": 1' in checked.stdout
    moved = subprocess.run([sys.executable, "-m", "grader.cli", "next", "--force"], cwd=tmp_path / "ws",
                           capture_output=True, text=True, env=env, timeout=120)
    assert moved.returncode == 0, moved.stderr + moved.stdout
    assert "lesson: 2" in (tmp_path / "ws/.copier-answers.yml").read_text()
    assert (tmp_path / "ws/rover/tools/bash.py").is_file()
