"""Lesson 4: write, and a loop that never writes from a reply cut off at max_tokens."""
from __future__ import annotations

from grader.grading.checks import Lab, check, excerpt, expect, tool_results
from grader.grading.checks.lesson_0 import done, say, turn, use


@check("write.create")
def create(lab: Lab) -> None:
    result = lab.ok("write", path="notes.md", content="# Notes\n\nFirst line.\n")
    expect((lab.tmp / "notes.md").read_text() == "# Notes\n\nFirst line.\n", "the file should hold exactly the content sent")
    expect("notes.md" in result.text, f"the result should name the path written, got {excerpt(result.text)}")


@check("write.parents")
def parents(lab: Lab) -> None:
    lab.ok("write", path="tests/unit/test_new.py", content="def test_it():\n    pass\n")
    expect((lab.tmp / "tests/unit/test_new.py").is_file(), "missing parent folders (tests/unit/) should be created")


@check("write.utf8-bytes")
def utf8_bytes(lab: Lab) -> None:
    content = "naïve café ☕ — 3 €\n"
    size, length = len(content.encode("utf-8")), len(content)  # 27 bytes, 19 characters
    text = lab.ok("write", path="menu.txt", content=content).text
    expect((lab.tmp / "menu.txt").read_bytes() == content.encode("utf-8"), "the file should be written as UTF-8")
    expect(str(size) in text and str(length) not in text,
           f"the result should count UTF-8 bytes ({size}), not characters ({length}), got {excerpt(text)}")


@check("write.exact")
def exact(lab: Lab) -> None:
    lab.ok("write", path="raw.txt", content="no newline at the end")
    lab.ok("write", path="crlf.txt", content="one\r\ntwo\r\n")
    expect((lab.tmp / "raw.txt").read_bytes() == b"no newline at the end", "write should add nothing: no trailing newline of its own")
    expect((lab.tmp / "crlf.txt").read_bytes() == b"one\r\ntwo\r\n", "write should change nothing: CRLF stays CRLF")


@check("write.overwrite")
def overwrite(lab: Lab) -> None:
    lab.file("config.py", "a = 1\nb = 2\nc = 3\n")
    lab.ok("write", path="config.py", content="a = 1\n")
    after = (lab.tmp / "config.py").read_text()
    expect(after == "a = 1\n", f"writing shorter content should replace the file completely, got {excerpt(after)}")


@check("write.atomic")
def atomic(lab: Lab) -> None:
    path = lab.file("data.json", '{"old": true}\n')
    inode = path.stat().st_ino
    lab.ok("write", path="data.json", content='{"new": true}\n')
    expect(path.read_text() == '{"new": true}\n', "the new content should be in place")
    expect(path.stat().st_ino != inode, "replace the file in one step (write_atomic: temp file, then rename), so a crash never leaves half a file")
    leftovers = sorted(p.name for p in lab.tmp.iterdir() if p.name != "data.json")
    expect(not leftovers, f"no temporary files should be left behind, found {leftovers}")


@check("write.directory")
def directory(lab: Lab) -> None:
    (lab.tmp / "docs").mkdir()
    text = lab.error("write", path="docs", content="x").text
    expect("directory" in text.lower() and "docs" in text and "Errno" not in text,
           f"writing to a directory should be refused in words the model can act on (not a raw OS error), got {excerpt(text)}")
    expect((lab.tmp / "docs").is_dir(), "the directory must be left alone")


@check("write.cut-off-turn")
def cut_off_turn(lab: Lab) -> None:
    half = use("toolu_cut", "write", path="big.py", content="def main():\n    print('hel")
    whole = use("toolu_whole", "write", path="small.py", content="print('hello')\n")
    run = lab.run_agent([turn(say("Writing it in one go"), half, stop="max_tokens"), turn(whole), done()], "Write the program.")
    expect(not (lab.tmp / "big.py").exists(), "a write from a reply cut off at max_tokens must not run: its content may be half a file")
    expect((lab.tmp / "small.py").read_text() == "print('hello')\n", "the smaller write the model sent next should run")
    cut = [block for block in tool_results(run.messages) if block.get("tool_use_id") == "toolu_cut"]
    expect(cut and cut[0].get("is_error"), "the cut-off write should be answered with an is_error tool_result")


@check("write.stash-scenario")
def stash_scenario(lab: Lab) -> None:
    run = lab.scenario(4)
    created = run.cwd / "tests/test_plain_text.py"
    expect(created.is_file(), "the scenario should create stash's tests/test_plain_text.py")
    results = [str(block.get("content")) for block in tool_results(run.messages)]
    expect(str(len(created.read_bytes())) in results[0], f"write should report the {len(created.read_bytes())} bytes written, got {excerpt(results[0])}")
    expect("1 passed" in results[-1], f"the new test should pass, got {excerpt(results[-1][-200:])}")
