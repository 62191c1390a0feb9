"""At 80 columns in a real terminal (a pty), prose wraps between words and commands and URLs never wrap."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from grader.classroom.board import create_app
from grader.classroom.serving import in_thread
from grader.classroom.store import Store
from tests.terminal import in_terminal, too_long

WORKSHOP = str(Path(sys.executable).with_name("workshop"))


def test_class_serve_prints_each_command_and_address_on_a_line_of_its_own(tmp_path):
    status, screen = in_terminal([WORKSHOP, "class", "serve", "--port", "0", "--db", "room.sqlite"], tmp_path,
                                 interrupt_once=str(tmp_path / "room.sqlite"), timeout=60)
    assert "^C\n" in screen and "\nBoard stopped" in screen, "the goodbye is on a line of its own, not after the ^C"
    assert re.search(r"(?m)^  http://127\.0\.0\.1:\d+/\?token=\S+$", screen), screen
    assert re.search(r"(?m)^  workshop class serve --host 0\.0\.0\.0 --port \d+ --db \S+$", screen), screen
    assert re.search(r'(?m)^  workshop join http://\S+:\d+ \w{4}-\w{4} --name "Their Name"$', screen), screen
    prose = [line for line in screen.splitlines() if not line.startswith("  ")]
    assert not too_long("\n".join(prose), 80), too_long("\n".join(prose), 80)


def test_the_lessons_inline_commands_never_break_across_lines(tmp_path):
    status, screen = in_terminal([WORKSHOP, "lesson", "1"], tmp_path, env={"PAGER": "cat"})
    assert status == 0
    lines = screen.splitlines()
    assert any("(python -m rover with a key" in line for line in lines), "an inline command kept whole on one line"
    assert any('execute("read", {"path": ...}, Path("."))' in line for line in lines)
    code = ' python -m rover --model scripted:scenarios/lesson-1.json "why does parse_date return None?"'
    assert code in lines, "a code block's line is printed whole, not wrapped"
    assert [line for line in too_long(screen, 80) if line != code] == []


def test_join_wraps_its_words_and_keeps_the_export_line_whole(workspace, tmp_path):
    from grader.classroom.relay import Relay

    folder = workspace(1)
    subprocess.run(["git", "init", "-q"], cwd=folder, check=True)
    store = Store(tmp_path / "class.sqlite")
    with in_thread(create_app(store, Relay(store, "sk-unused", 1000, "http://127.0.0.1:9"))) as url:
        status, screen = in_terminal([WORKSHOP, "join", url, store.code, "--name", "Ada Lovelace-Byron"], folder)
    store.close()
    assert status == 0, screen
    assert re.search(rf"(?m)^  export ANTHROPIC_BASE_URL={re.escape(url)} ANTHROPIC_API_KEY=\S+$", screen), screen
    assert not [line for line in too_long(screen, 80) if "export" not in line], screen
    assert "`workshop check`" in screen and "`workshop leave`" in screen


def test_a_refusal_wraps_between_words_and_keeps_its_command(workspace, tmp_path):
    folder = workspace(1)
    status, screen = in_terminal([WORKSHOP, "check", "--junit", "missing-folder/report.xml"], folder)
    assert status == 2 and not too_long(screen, 80), screen
    assert "`mkdir -p missing-folder`" in screen and len(screen.splitlines()) > 1, screen
