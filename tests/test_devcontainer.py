"""The dev container every workspace carries: what it asks for, where the kit comes from, what its set-up runs."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from grader.cli import main
from grader.course.requirement import kit_requirement, requirement_from

KIT = "git+https://example.invalid/workshop@v1"


def start(target: Path, *extra: str):
    return CliRunner().invoke(main, ["start", "lesson-2", str(target), *extra], catch_exceptions=False)


def test_start_puts_a_plain_json_dev_container_in_the_workspace(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKSHOP_KIT", KIT)
    assert start(tmp_path / "ws").exit_code == 0
    config = json.loads((tmp_path / "ws/.devcontainer/devcontainer.json").read_text())  # plain JSON: no comments
    assert config["image"].startswith("mcr.microsoft.com/devcontainers/python:3.")
    assert config["postCreateCommand"] == "bash .devcontainer/post-create.sh"
    assert config["containerEnv"] == {"WORKSHOP_KIT": "${localEnv:WORKSHOP_KIT}"}
    assert "WORKSHOP_KIT" in config["secrets"]
    assert (tmp_path / "ws/.devcontainer/post-create.sh").is_file()
    tracked = subprocess.run(["git", "ls-files", ".devcontainer"], cwd=tmp_path / "ws", capture_output=True, text=True).stdout
    assert tracked.split() == [".devcontainer/devcontainer.json", ".devcontainer/post-create.sh"]


def test_the_kit_requirement_is_written_in_at_start_and_survives_next(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKSHOP_KIT", KIT)
    assert start(tmp_path / "ws").exit_code == 0
    script = tmp_path / "ws/.devcontainer/post-create.sh"
    assert f'rendered_kit="{KIT}"' in script.read_text()
    monkeypatch.delenv("WORKSHOP_KIT")
    monkeypatch.chdir(tmp_path / "ws")
    moved = CliRunner().invoke(main, ["next", "--force"], catch_exceptions=False)
    assert moved.exit_code == 0, moved.output
    assert f'rendered_kit="{KIT}"' in script.read_text()


@pytest.mark.parametrize("recorded, expected", [
    ({"url": "https://github.com/org/workshop", "vcs_info": {"vcs": "git", "requested_revision": "v1", "commit_id": "ab12"}},
     "git+https://github.com/org/workshop@v1"),
    ({"url": "https://github.com/org/workshop", "vcs_info": {"vcs": "git", "commit_id": "ab12"}}, "git+https://github.com/org/workshop@ab12"),
    ({"url": "https://example.invalid/workshop_kit-0.1.0-py3-none-any.whl", "archive_info": {}},
     "https://example.invalid/workshop_kit-0.1.0-py3-none-any.whl"),
    ({"url": "file:///home/me/workshop", "dir_info": {"editable": True}}, ""),  # a folder no container can see
    ({"url": "https://me:s3cret@git.example.invalid/workshop", "vcs_info": {"vcs": "git", "commit_id": "ab12"}}, ""),
])
def test_the_requirement_comes_from_where_pip_installed_the_kit(recorded, expected):
    assert requirement_from(recorded) == expected


def test_workshop_kit_wins_and_nothing_unsafe_reaches_the_script(monkeypatch):
    monkeypatch.setenv("WORKSHOP_KIT", f"  {KIT} ")
    assert kit_requirement() == KIT
    monkeypatch.setenv("WORKSHOP_KIT", 'x"; rm -rf ~; echo "')
    assert kit_requirement() == ""


def fake_commands(folder: Path, bwrap_works: bool) -> Path:
    """apt-get, sudo, python, bwrap and workshop that only log their arguments, so the set-up runs anywhere."""
    folder.mkdir()
    log = folder / "calls.log"
    for name, status in [("apt-get", 0), ("sudo", None), ("python", 0), ("bwrap", 0 if bwrap_works else 1), ("workshop", 0)]:
        body = 'exec "$@"' if status is None else f'echo "{name} $*" >> "{log}"; exit {status}'
        (folder / name).write_text(f"#!/bin/sh\n{body}\n")
        (folder / name).chmod(0o755)
    return log


def post_create(workspace: Path, tmp_path: Path, env_kit: str | None, bwrap_works: bool = True):
    log = fake_commands(tmp_path / "bin", bwrap_works)
    env = {"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path)}
    if env_kit is not None:
        env["WORKSHOP_KIT"] = env_kit
    done = subprocess.run(["bash", ".devcontainer/post-create.sh"], cwd=workspace, env=env, capture_output=True, text=True, timeout=60)
    return done, log.read_text() if log.exists() else ""


def test_post_create_installs_bubblewrap_and_the_rendered_kit(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKSHOP_KIT", KIT)
    start(tmp_path / "ws")
    done, calls = post_create(tmp_path / "ws", tmp_path, env_kit="")  # containerEnv gives "" when the host has none
    assert done.returncode == 0, done.stderr
    assert "apt-get install -y -qq bubblewrap" in calls
    assert f"python -m pip install --disable-pip-version-check {KIT}" in calls
    assert "bubblewrap works here" in done.stdout and "workshop --version" in calls


def test_post_create_prefers_the_containers_workshop_kit_and_says_when_bwrap_cannot_start(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKSHOP_KIT", KIT)
    start(tmp_path / "ws")
    done, calls = post_create(tmp_path / "ws", tmp_path, env_kit="git+https://example.invalid/workshop@v2", bwrap_works=False)
    assert done.returncode == 0, done.stderr
    assert "pip install --disable-pip-version-check git+https://example.invalid/workshop@v2" in calls and KIT not in calls
    assert "bubblewrap cannot start in this container" in done.stdout


def test_post_create_without_a_kit_says_what_to_set_and_fails(tmp_path, monkeypatch):
    monkeypatch.delenv("WORKSHOP_KIT", raising=False)
    monkeypatch.setattr("grader.course.requirement.installed_from", lambda: "")
    start(tmp_path / "ws")
    done, calls = post_create(tmp_path / "ws", tmp_path, env_kit=None)
    assert done.returncode == 1
    assert "set WORKSHOP_KIT" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "pip install" not in calls and "bubblewrap" in calls
