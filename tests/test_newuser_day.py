"""The new-user tester's day, through the real commands: each finding fixed stays fixed."""
from __future__ import annotations

import os
import shutil
import signal
import sys
import subprocess
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from grader.cli import main

from tests.test_real_life import git, one_line_refusal, run, state


def test_next_force_refuses_a_missing_registry_and_its_advice_works(started):
    root = started(1)
    (root / "rover/tools/__init__.py").unlink()
    before = state(root)
    one_line_refusal(run("next", "--force"), "rover/tools/__init__.py is missing", "git checkout HEAD -- rover/tools/__init__.py")
    assert state(root) == before  # the deletion was not committed, the lesson did not move
    subprocess.run(["git", "checkout", "HEAD", "--", "rover/tools/__init__.py"], cwd=root, check=True)
    assert (root / "rover/tools/__init__.py").is_file()


def test_a_committed_deletion_gets_advice_that_works(started):
    root = started(1)
    (root / "rover/tools/__init__.py").unlink()
    subprocess.run("git add -A && git -c user.name=a -c user.email=a@b commit -qm gone", shell=True, cwd=root, check=True)
    refusal = run("next", "--force")
    one_line_refusal(refusal, "rover/tools/__init__.py is missing")
    advice = refusal.output.split("with `", 1)[1].split("`", 1)[0]
    assert "HEAD --" not in advice and " ".join(run("check").output.split()).endswith(f"`{advice}`.")
    subprocess.run(advice, shell=True, cwd=root, check=True)
    assert run("next", "--force").exit_code == 0 and (root / "rover/tools/__init__.py").is_file()


def test_next_force_refuses_when_rover_is_gone(started):
    root = started(1)
    shutil.rmtree(root / "rover")
    one_line_refusal(run("next", "--force"), "rover/ is missing", "git checkout HEAD -- rover")
    assert "lesson: 1" in (root / ".copier-answers.yml").read_text()


def test_a_stale_lock_in_the_template_cache_is_cleared(tmp_path, monkeypatch):
    from grader.course.template_repo import template_source

    lock = template_source() / ".git/index.lock"
    lock.write_text("")
    root = tmp_path / "rover-1"
    assert run("start", "lesson-1", str(root)).exit_code == 0  # start renders through the cache
    monkeypatch.chdir(root)
    assert not lock.exists()
    lock.write_text("")
    assert run("next", "--force").exit_code == 0 and "lesson: 2" in (root / ".copier-answers.yml").read_text()


def test_a_broken_template_cache_is_one_line(tmp_path, monkeypatch):
    import os
    from pathlib import Path

    from grader.course.template_repo import location

    monkeypatch.setenv("WORKSHOP_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache/template/.git").mkdir(parents=True)  # a .git that is no repository
    (Path(os.environ["WORKSHOP_CACHE"]) / "template/.git/HEAD").write_text("garbage\n")
    monkeypatch.chdir(tmp_path)
    one_line_refusal(run("start", "lesson-0", "ws"), "template cache", str(location()), "rm -rf")


def test_hint_where_its_memory_cannot_be_written(started):
    root = started(1)
    (root / ".git/workshop-hints.json").mkdir()  # any write there fails, as on a read-only file system
    for _ in range(2):
        shown = run("hint")
        assert shown.exit_code == 0 and "Traceback" not in shown.output and "Hint 1 of" in shown.output, shown.output
    (root / ".git/workshop-hints.json").rmdir()
    (root / ".git/workshop-hints.json").write_text("not json")
    assert "Hint 1 of" in run("hint").output and "Hint 2 of" in run("hint").output


CTRL_C_DURING = """
import os, runpy, signal, sys

class CtrlC:  # a Ctrl-C that arrives while `{module}` is about to load
    def find_spec(self, name, path=None, target=None):
        if name == "{module}":
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, CtrlC())
sys.argv = ["workshop", "status"]
runpy.run_module("grader.cli", run_name="__main__", alter_sys=True)
"""


def test_ctrl_c_before_the_kits_own_handler_is_quiet(started):
    root = started(1)
    for module in ("grader.ctrl_c", "click", "grader.commands.status"):  # the last: the command, loaded when it runs
        probe = subprocess.run([sys.executable, "-c", CTRL_C_DURING.format(module=module)], cwd=root,
                               capture_output=True, text=True, timeout=60)
        assert probe.returncode == 130, (module, probe.returncode, probe.stderr[-800:])
        assert "Traceback" not in probe.stderr and "KeyboardInterrupt" not in probe.stderr
        assert probe.stderr.strip() == "workshop: interrupted"


def test_after_loading_ctrl_c_is_a_keyboard_interrupt_again():
    probe = subprocess.run([sys.executable, "-c", "import signal, grader.cli; "
                            "print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"],
                           capture_output=True, text=True, timeout=60)
    assert probe.stdout.strip() == "True", probe.stderr


def test_a_lesson_that_never_passed_is_unfinished_not_a_regression(started):
    root = started(1)
    assert run("next", "--force").exit_code == 0
    checked = " ".join(run("check").output.split())
    assert "regression" not in checked and "passed before" not in checked
    assert "(lesson 1 is unfinished)" in checked
    status = run("status", columns=120).output
    assert "regressed" not in status and "unfinished" in status


@pytest.fixture
def no_identity(tmp_path, monkeypatch):
    """A new laptop: git knows no name or email, and will not guess one."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tuseConfigOnly = true\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    for name in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL"):
        monkeypatch.delenv(name, raising=False)


def advice(result) -> str:
    """The first `command` in a refusal."""
    return result.output.split("`", 2)[1]


def test_the_git_init_advice_works_with_no_identity(started, no_identity):
    root = started(1)
    shutil.rmtree(root / ".git")
    refusal = run("next", "--force")
    one_line_refusal(refusal, "git init")
    assert subprocess.run("git commit -q --allow-empty -m x", shell=True, cwd=root, capture_output=True).returncode != 0, \
        "git really has no identity here"
    subprocess.run(advice(refusal), shell=True, cwd=root, check=True, capture_output=True)
    assert run("next", "--force").exit_code == 0


def test_a_students_own_merge_is_undone_with_merge_abort(started, no_identity):
    root = started(1)
    read = root / "rover/tools/read.py"
    commit = ["git", "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qam"]
    subprocess.run(["git", "checkout", "-qb", "idea"], cwd=root, check=True)
    read.write_text("# idea\n")
    subprocess.run([*commit, "idea"], cwd=root, check=True)
    subprocess.run(["git", "checkout", "-q", "-"], cwd=root, check=True)
    read.write_text("# other\n")
    subprocess.run([*commit, "other"], cwd=root, check=True)
    subprocess.run(["git", "-c", "user.name=a", "-c", "user.email=a@b", "merge", "-q", "idea"], cwd=root, capture_output=True)
    assert (root / ".git/MERGE_HEAD").exists()
    refusal = run("next", "--force")
    one_line_refusal(refusal, "rover/tools/read.py", "git merge --abort")
    assert "reset --hard" not in refusal.output
    resolve = refusal.output.split("then `", 1)[1].split("`", 1)[0]
    assert "user.name" in resolve
    subprocess.run("git merge --abort", shell=True, cwd=root, check=True)
    assert read.read_text() == "# other\n" and not (root / ".git/MERGE_HEAD").exists()


def test_hint_and_demo_name_the_missing_file_as_check_does(started):
    root = started(2)
    (root / "rover/tools/__init__.py").unlink()
    hint = " ".join(run("hint").output.split())
    assert "rover/tools/__init__.py is missing" in hint and "git checkout HEAD -- rover/tools/__init__.py" in hint
    assert "agent.py" not in hint and "Hint 1" not in hint
    one_line_refusal(run("demo"), "rover/tools/__init__.py is missing", "git checkout HEAD -- rover/tools/__init__.py")
    shutil.rmtree(root / "rover")
    hint = " ".join(run("hint").output.split())
    assert "rover/ is missing" in hint and "No module named" not in hint and "git checkout HEAD -- rover`" in hint
    one_line_refusal(run("demo"), "rover/ is missing", "git checkout HEAD -- rover`")


def test_reset_prompt_wraps_between_words_and_ctrl_c_is_130(started, monkeypatch):
    import builtins

    import grader.commands.reset as reset

    root = started(1)
    monkeypatch.setattr(reset, "can_ask", lambda: True)
    monkeypatch.setenv("COLUMNS", "80")
    said = CliRunner().invoke(main, ["reset", "--all"], input="n\n", catch_exceptions=False, env={"COLUMNS": "80"})
    assert said.exit_code == 1 and "Nothing reset" in said.output
    prompt = said.output.split("[y/N]:")[0]
    assert all(len(line) <= 80 for line in prompt.splitlines()), prompt
    assert " ".join(prompt.split()) == "Reset every file of the lesson, and stash, to how the lesson started? Your version stays in git"
    assert all(not line.endswith(("-", "Rese", "fi")) for line in prompt.splitlines())
    before = state(root)

    def ctrl_c(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(builtins, "input", ctrl_c)
    stopped = CliRunner().invoke(main, ["reset", "read"], catch_exceptions=False)
    assert stopped.exit_code == 130 and "Aborted" not in stopped.output and "Traceback" not in stopped.output
    assert state(root) == before


def test_reports_is_loaded_before_any_grading():
    probe = subprocess.run([sys.executable, "-c", "import sys, grader.commands.check; print('grader.grading.reports' in sys.modules)"],
                           capture_output=True, text=True, timeout=60)
    assert probe.stdout.strip() == "True", probe.stderr


@pytest.mark.parametrize("lesson, check_id", [(2, "bash.kills-group"), (3, "edit.all-or-nothing")])
def test_a_stub_lessons_failures_are_plain(started, lesson, check_id):
    started(lesson)
    shown = run("check", "--all").output
    row = shown.split(f"✗ {check_id}", 1)[1].split("\n  ✗", 1)[0]
    assert "not written yet" in " ".join(row.split()), row
    assert "crashed" not in row and "child.pid'" not in row and "\\n" not in row, row
    assert "crashed" not in run("check").output


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_watch_ended_by_a_signal_leaves_no_temp_folder(started, tmp_path, signum):
    root = started(1)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    watcher = subprocess.Popen([sys.executable, "-m", "grader.cli", "watch"], cwd=root, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env={**os.environ, "TMPDIR": str(scratch)})
    deadline = time.monotonic() + 60
    while not list(scratch.glob("workshop-watch-*")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(scratch.glob("workshop-watch-*")), "watch made its scratch folder"
    time.sleep(0.5)  # the kit's imports are in and the first grade has begun
    watcher.send_signal(signum)
    out, err = watcher.communicate(timeout=30)
    assert watcher.returncode == 128 + signum, (watcher.returncode, err[-500:])
    assert list(scratch.iterdir()) == [] and "Traceback" not in err


def test_an_unwritable_cache_is_named_not_the_workspace(started, tmp_path, monkeypatch):
    root = started(1)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("WORKSHOP_CACHE", str(blocker))
    before = state(root)
    one_line_refusal(run("next", "--force"), "template cache", str(blocker), "WORKSHOP_CACHE")
    assert state(root) == before
    monkeypatch.chdir(tmp_path)
    one_line_refusal(run("start", "lesson-0", "fresh"), "template cache", "WORKSHOP_CACHE")
    assert not (tmp_path / "fresh").exists()


def test_a_report_folder_that_cannot_be_written_is_not_told_to_be_made(started, tmp_path, monkeypatch):
    started(1)
    unwritable = tmp_path / "locked"
    unwritable.mkdir()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: False if Path(path) == unwritable else real_access(path, mode))
    refusal = run("check", "--junit", str(unwritable / "r.xml"))
    one_line_refusal(refusal, "cannot be written")
    assert "mkdir" not in refusal.output and "does not exist" not in refusal.output
    one_line_refusal(run("check", "--junit", str(tmp_path / "nowhere/r.xml")), "does not exist", "mkdir -p")


def test_watchs_run_rule_spans_a_wide_terminal(started):
    import io

    from rich.console import Console

    import grader.commands.watch as watching
    from grader.course.workspace import Workspace

    root = started(1)
    screen = io.StringIO()
    watching.watch(Workspace.find(root), interval=0.1, rounds=1, console=Console(file=screen, width=120, highlight=False))
    rule = next(line for line in screen.getvalue().splitlines() if line.startswith("── run 1"))
    assert len(rule) == 120 and rule.endswith("─"), rule
