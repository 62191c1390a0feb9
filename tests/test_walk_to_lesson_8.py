"""A student who wrote their own loop in lesson 0 walks to lesson 8: their files stay theirs all the way,
and the two lines the lesson-8 text tells them to add are what the loop check asks for."""
from __future__ import annotations

import json

from click.testing import CliRunner

from grader.cli import main
from grader.course import kit
from grader.course.workspace import Workspace

TRIM = "            self.messages = trim(self.messages, BUDGET)  # lesson 8: old tool results give way to stubs\n"
IMPORT = "from rover.context import BUDGET, trim\n"


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def own_loop() -> str:
    """The reference loop as a lesson-0 student writes it: no trim, which lesson 0 never mentions."""
    source = (kit.root() / "solutions/rover/agent.py").read_text(encoding="utf-8")
    assert TRIM in source and IMPORT in source, "the reference loop should trim; update this test with it"
    return source.replace(TRIM, "").replace(IMPORT, "") + "\n# my loop, written in lesson 0\n"


def test_a_walk_from_lesson_0_to_8_keeps_the_students_work(tmp_path, monkeypatch):
    root = tmp_path / "rover"
    assert run("start", "lesson-0", str(root)).exit_code == 0
    monkeypatch.chdir(root)
    mine = own_loop()
    (root / "rover/agent.py").write_text(mine)
    kept = {"rover/agent.py": mine}
    for lesson in range(1, 9):
        moved = run("next", "--force")
        assert moved.exit_code == 0, moved.output
        assert Workspace.find(root).lesson == lesson
        for relative, text in kept.items():
            assert (root / relative).read_text() == text, f"lesson {lesson}: {relative} is no longer the student's"
        if lesson < 8:  # finish this lesson the student's way: the reference, signed
            target = root / kit.lesson(lesson).file
            text = kit.lesson(lesson).solution.read_text() + f"\n# finished by me in lesson {lesson}\n"
            target.write_text(text)
            kept[kit.lesson(lesson).file] = text

    assert "NotImplementedError" not in (root / "rover/context.py").read_text() and "TODO(lesson 8)" in (root / "rover/context.py").read_text()
    assert run("solution", "--apply").exit_code == 0  # trim itself is right now, the loop is still the lesson-0 one
    report = json.loads(run("check", "--json").output)
    failing = {entry["id"] for entry in report["checks"] if entry["status"] != "passed"}
    assert failing == {"context.loop-trims", "context.stash-scenario"}, failing

    loop = (root / "rover/agent.py").read_text()  # the two lines the lesson text gives
    loop = loop.replace("from rover.display import", IMPORT + "from rover.display import", 1)
    loop = loop.replace("            reply = self.model.complete(", TRIM + "            reply = self.model.complete(", 1)
    (root / "rover/agent.py").write_text(loop)
    report = json.loads(run("check", "--json").output)
    assert report["passed"], [entry["id"] for entry in report["checks"] if entry["status"] != "passed"]
