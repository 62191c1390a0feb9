"""Lesson 3: edit, on files made for each check, then the parse_date fix on a fresh stash."""
from __future__ import annotations

import os

from grader.grading.checks import Lab, check, excerpt, expect, tool_results

CONFIG = "name = 'stash'\ndebug = False\nretries = 3\n"
THRICE = "def render(entry):\n    title = entry.title\n    return f'<h2>{title}</h2>'\n"


def unchanged(lab: Lab, name: str, before: bytes, why: str) -> None:
    after = (lab.tmp / name).read_bytes()
    expect(after == before, f"{why}, the file must be left exactly as it was; it changed to {excerpt(after.decode(errors='replace'))}")
    leftovers = sorted(path.name for path in lab.tmp.iterdir() if path.name != name)
    expect(not leftovers, f"a refused edit should leave nothing behind, found {leftovers}")


def edit(lab: Lab, path: str, *pairs: tuple[str, str]):
    return lab.tool("edit", path=path, edits=[{"oldText": old, "newText": new} for old, new in pairs])


@check("edit.replace")
def replace(lab: Lab) -> None:
    lab.file("config.py", CONFIG)
    result = edit(lab, "config.py", ("debug = False", "debug = True"))
    expect(not result.is_error, f"a unique match should be replaced, got the error {excerpt(result.text)}")
    after = (lab.tmp / "config.py").read_text()
    expect(after == CONFIG.replace("debug = False", "debug = True"), f"only the matched text should change, the file is now {excerpt(after)}")


@check("edit.diff")
def diff(lab: Lab) -> None:
    lab.file("config.py", CONFIG)
    text = edit(lab, "config.py", ("retries = 3", "retries = 5")).text
    expect("-retries = 3" in text and "+retries = 5" in text and "@@" in text,
           f"the result should carry a unified diff of the change (difflib.unified_diff), got {excerpt(text)}")
    expect("line 3" in text, f"the result should name the line where the change starts (line 3), got {excerpt(text)}")


@check("edit.not-found")
def not_found(lab: Lab) -> None:
    before = lab.file("config.py", CONFIG).read_bytes()
    text = lab.error("edit", path="config.py", edits=[{"oldText": "debug  = False", "newText": "debug = True"}]).text
    expect("not found" in text.lower() and "read" in text.lower(),
           f"the error should say the text was not found and to copy it from a fresh read, got {excerpt(text)}")
    unchanged(lab, "config.py", before, "when oldText is not found")


@check("edit.multiple-matches")
def multiple_matches(lab: Lab) -> None:
    before = lab.file("render.py", THRICE).read_bytes()
    text = lab.error("edit", path="render.py", edits=[{"oldText": "title", "newText": "headline"}]).text
    expect("3" in text and ("unique" in text.lower() or "more" in text.lower()),
           f"'title' occurs 3 times: the error should say 3 and ask for more surrounding text, got {excerpt(text)}")
    unchanged(lab, "render.py", before, "when oldText matches several places")
    edit(lab, "render.py", ("    title = entry.title", "    title = entry.title.strip()"))
    expect("entry.title.strip()" in (lab.tmp / "render.py").read_text(), "with a whole line as oldText, the match is unique and the edit should apply")


@check("edit.overlap")
def overlap(lab: Lab) -> None:
    before = lab.file("config.py", CONFIG).read_bytes()
    text = lab.error("edit", path="config.py", edits=[
        {"oldText": "debug = False\nretries", "newText": "debug = True\nretries"},
        {"oldText": "retries = 3", "newText": "retries = 5"},
    ]).text
    expect("overlap" in text.lower() and "1" in text and "2" in text, f"the error should say edits 1 and 2 overlap, got {excerpt(text)}")
    unchanged(lab, "config.py", before, "when edits overlap")


@check("edit.all-or-nothing")
def all_or_nothing(lab: Lab) -> None:
    before = lab.file("config.py", CONFIG).read_bytes()
    lab.error("edit", path="config.py", edits=[
        {"oldText": "debug = False", "newText": "debug = True"},
        {"oldText": "timeout = 10", "newText": "timeout = 30"},
    ])
    unchanged(lab, "config.py", before, "when the second of two edits fails, the first must not be applied either:")
    edit(lab, "config.py", ("debug = False", "debug = True"), ("retries = 3", "retries = 4"))
    after = (lab.tmp / "config.py").read_text()
    expect(after == "name = 'stash'\ndebug = True\nretries = 4\n", f"with both edits valid, both should apply; the file is {excerpt(after)}")


@check("edit.original-file")
def original_file(lab: Lab) -> None:
    lab.file("config.py", CONFIG)
    result = edit(lab, "config.py", ("retries = 3", "retries = 5"), ("name = 'stash'", "name = 'stash2'"))
    expect(not result.is_error, f"two separate edits, given in any order, should both apply, got {excerpt(result.text)}")
    after = (lab.tmp / "config.py").read_text()
    expect(after == "name = 'stash2'\ndebug = False\nretries = 5\n", f"both edits should apply, got {excerpt(after)}")
    lab.file("chain.py", "a = 1\n")
    lab.error("edit", path="chain.py", edits=[{"oldText": "a = 1", "newText": "a = 2"}, {"oldText": "a = 2", "newText": "a = 3"}])
    expect((lab.tmp / "chain.py").read_text() == "a = 1\n", "edits match the original file, not the result of earlier edits: 'a = 2' is not in it")


@check("edit.refuse-empty-and-noop")
def refuse_empty_and_noop(lab: Lab) -> None:
    before = lab.file("config.py", CONFIG).read_bytes()
    text = lab.error("edit", path="config.py", edits=[{"oldText": "", "newText": "x = 1\n"}]).text
    expect("empty" in text.lower(), f"an empty oldText should be refused as empty, got {excerpt(text)}")
    text = lab.error("edit", path="config.py", edits=[{"oldText": "retries = 3", "newText": "retries = 3"}]).text
    expect("same" in text.lower() or "no-op" in text.lower() or "nothing" in text.lower(),
           f"an edit whose newText equals its oldText changes nothing and should be refused, got {excerpt(text)}")
    unchanged(lab, "config.py", before, "after refused edits")


@check("edit.crlf-bom")
def crlf_bom(lab: Lab) -> None:
    lab.file("win.py", b"\xef\xbb\xbfa = 1\r\nb = 2\r\nc = 3\r\n")
    result = edit(lab, "win.py", ("a = 1\nb = 2", "a = 10\nb = 20"))
    expect(not result.is_error, f"an LF oldText should match a CRLF file, got {excerpt(result.text)}")
    after = (lab.tmp / "win.py").read_bytes()
    expect(after == b"\xef\xbb\xbfa = 10\r\nb = 20\r\nc = 3\r\n", f"the BOM and CRLF line endings should survive the edit, got {after!r}")


@check("edit.atomic")
def atomic(lab: Lab) -> None:
    path = lab.file("run.sh", "echo one\n")
    os.chmod(path, 0o755)
    inode = path.stat().st_ino
    edit(lab, "run.sh", ("echo one", "echo two"))
    expect(path.read_text() == "echo two\n", "the edit should apply")
    expect(path.stat().st_ino != inode, "the file should be replaced in one step (write a temp file, then rename it over: write_atomic), not rewritten in place")
    expect(path.stat().st_mode & 0o777 == 0o755, "the file's permissions should be kept")


@check("edit.stash-scenario")
def stash_scenario(lab: Lab) -> None:
    run = lab.scenario(3)
    fixed = (run.cwd / "stash/extract.py").read_text()
    expect('        "%a, %d %b %Y %H:%M:%S %z",\n' in fixed and fixed.count("\n") == 27,
           f"after the scenario, parse_date should list the offset-aware formats first, got {excerpt(fixed[200:520])}")
    runs = [str(block.get("content")) for block in tool_results(run.messages) if "passed" in str(block.get("content"))]
    expect(runs and "1 failed, 1 passed" in runs[-1], "stash's suite should end at '1 failed, 1 passed' after the fix")
