"""Lesson 7: argument repair, through the seam (prepare_arguments) and through the registry's execute."""
from __future__ import annotations

import json
import random

from grader.grading.checks import Lab, check, excerpt, expect, tool_results

SEAM = ("rover.tools.repair", "prepare_arguments")
CONFIG = "name = 'stash'\ndebug = False\nretries = 3\n"


def prepare(lab: Lab, name: str, args: dict) -> tuple[object, list]:
    answer = lab.call(*SEAM, name, args)
    expect(isinstance(answer, list) and len(answer) == 2 and isinstance(answer[1], list),
           f"prepare_arguments should return (args, notes) with notes a list, got {excerpt(answer)}")
    return answer[0], answer[1]


def repaired_to(lab: Lab, name: str, sent: dict, wanted: dict, *named: str) -> list:
    """prepare_arguments(name, sent) gives `wanted`, with notes that mention each of `named`."""
    args, notes = prepare(lab, name, sent)
    expect(args == wanted, f"prepare_arguments({name!r}, {excerpt(sent, 160)}) should give {excerpt(wanted, 160)}, got {excerpt(args, 160)}")
    for word in named:
        expect(any(word in str(note) for note in notes), f"the notes should name the repair of {word}, got {excerpt(notes)}")
    return notes


def a_name() -> str:
    return random.choice(["feeds", "app", "notes", "extract", "report"]) + f"_{random.randint(10, 99)}.py"


@check("repair.path-aliases")
def path_aliases(lab: Lab) -> None:
    path = a_name()
    repaired_to(lab, "read", {"filePath": path}, {"path": path}, "filePath")
    repaired_to(lab, "write", {"file_path": path, "content": "x = 1\n"}, {"path": path, "content": "x = 1\n"}, "file_path")
    args, notes = prepare(lab, "read", {"path": path, "offset": 2})
    expect(args == {"path": path, "offset": 2} and not notes,
           f"a call that is already right should come back unchanged with no notes, got {excerpt([args, notes])}")


@check("repair.text-aliases")
def text_aliases(lab: Lab) -> None:
    path = a_name()
    for old, new in [("old_string", "new_string"), ("oldString", "newString"), ("old_str", "new_str"), ("oldString", "new_str")]:
        repaired_to(lab, "edit", {"path": path, "edits": [{old: "a = 1", new: "a = 2"}]},
                    {"path": path, "edits": [{"oldText": "a = 1", "newText": "a = 2"}]}, old, new)


@check("repair.top-level-edit")
def top_level_edit(lab: Lab) -> None:
    path, edit = a_name(), {"oldText": "debug = False", "newText": "debug = True"}
    repaired_to(lab, "edit", {"path": path, **edit}, {"path": path, "edits": [edit]})
    repaired_to(lab, "edit", {"file_path": path, "old_string": "debug = False", "new_string": "debug = True"},
                {"path": path, "edits": [edit]}, "file_path")
    other = {"oldText": "retries = 3", "newText": "retries = 5"}
    args, _ = prepare(lab, "edit", {"path": path, "edits": [other], **edit})
    edits = args.get("edits") if isinstance(args, dict) else None
    expect(isinstance(edits, list) and len(edits) == 2 and other in edits and edit in edits and set(args) == {"path", "edits"},
           f"a top-level oldText/newText beside edits should join the list (2 edits in all), got {excerpt(args)}")


@check("repair.edits-json-string")
def edits_json_string(lab: Lab) -> None:
    path = a_name()
    edits = [{"oldText": "debug = False", "newText": "debug = True"}, {"oldText": "retries = 3", "newText": "retries = 4"}]
    repaired_to(lab, "edit", {"path": path, "edits": json.dumps(edits)}, {"path": path, "edits": edits}, "edits")
    repaired_to(lab, "edit", {"path": path, "edits": json.dumps(edits[0])}, {"path": path, "edits": edits[:1]}, "edits")
    inside = json.dumps([{"old_string": "debug = False", "new_string": "debug = True"}])
    repaired_to(lab, "edit", {"file_path": path, "edits": inside}, {"path": path, "edits": edits[:1]}, "edits", "old_string")


@check("repair.json-as-models-write-it")
def json_as_models_write_it(lab: Lab) -> None:
    path = a_name()
    raw = '[{"oldText": "def a():\n    return 1", "newText": "def a():\n    return 2"}]'
    wanted = {"path": path, "edits": [{"oldText": "def a():\n    return 1", "newText": "def a():\n    return 2"}]}
    repaired_to(lab, "edit", {"path": path, "edits": raw}, wanted, "edits")
    trailing = '[{"oldText": "x = [1, 2,]", "newText": "x = [1, 2]",},\n]'
    repaired_to(lab, "edit", {"path": path, "edits": trailing}, {"path": path, "edits": [{"oldText": "x = [1, 2,]", "newText": "x = [1, 2]"}]}, "edits")
    lab.file(path, CONFIG)
    text = lab.error("edit", path=path, edits="replace debug with True").text
    expect((lab.tmp / path).read_text() == CONFIG, "a string that is not JSON must not change the file")
    expect("edits" in text and "replace debug with True" in text,
           f"edits that are not JSON should stay as they were, for the validator to name and echo, got {excerpt(text)}")


@check("repair.single-edit")
def single_edit(lab: Lab) -> None:
    path = a_name()
    edit = {"oldText": "retries = 3", "newText": "retries = 7"}
    repaired_to(lab, "edit", {"path": path, "edits": edit}, {"path": path, "edits": [edit]}, "edits")
    repaired_to(lab, "edit", {"path": path, "edits": {"old_string": "retries = 3", "new_string": "retries = 7"}},
                {"path": path, "edits": [edit]}, "old_string")


@check("repair.number-strings")
def number_strings(lab: Lab) -> None:
    path, offset = a_name(), random.randint(2, 9)
    repaired_to(lab, "read", {"path": path, "offset": str(offset), "limit": "3"}, {"path": path, "offset": offset, "limit": 3}, "offset", "limit")
    for wrong in ["ten", "1.5", "", "3 lines"]:
        args, _ = prepare(lab, "read", {"path": path, "offset": wrong})
        expect(args == {"path": path, "offset": wrong},
               f"offset={wrong!r} is not a whole number: leave it for the validator, got {excerpt(args)}")
    digits = str(random.randint(100, 999))
    lab.ok("write", path="count.txt", content=digits)
    expect((lab.tmp / "count.txt").read_text() == digits,
           f"write's content is a string in its schema: {digits!r} must be written as it is, got {excerpt((lab.tmp / 'count.txt').read_text())}")
    lab.file(path, "".join(f"line {n}\n" for n in range(1, 13)))
    text = lab.ok("read", path=path, offset=str(offset), limit="2").text
    expect(f"{offset:>6}\tline {offset}" in text and f"line {offset + 2}" not in text,
           f"read with offset={str(offset)!r}, limit='2' should show lines {offset}-{offset + 1}, got {excerpt(text)}")


@check("repair.conflict")
def conflict(lab: Lab) -> None:
    first, second = a_name(), "other_" + a_name()
    lab.file(first, CONFIG)
    text = lab.error("read", path=first, filePath=second).text
    expect(first in text and second in text, f"path and filePath disagree: the error should name both values ({first}, {second}), got {excerpt(text)}")
    text = lab.error("write", path=first, file_path=second, content="x = 1\n").text
    expect(not (lab.tmp / second).exists() and (lab.tmp / first).read_text() == CONFIG,
           "a call with two different paths must not write either file")
    expect(first in text and second in text, f"the write's error should name both paths, got {excerpt(text)}")
    lab.ok("read", path=first, filePath=first)  # the same value twice is no conflict
    text = lab.error("edit", path=first, edits=[{"oldText": "debug = False", "old_string": "retries = 3", "newText": "x = 1"}]).text
    expect("debug = False" in text and "retries = 3" in text and (lab.tmp / first).read_text() == CONFIG,
           f"an edit with oldText and old_string that differ should be refused naming both, got {excerpt(text)}")


@check("repair.notes")
def notes(lab: Lab) -> None:
    path = a_name()
    lab.file(path, CONFIG)
    edits = json.dumps([{"oldText": "debug = False", "newText": "debug = True"}])
    result = lab.ok("edit", filePath=path, edits=edits)
    expect((lab.tmp / path).read_text() == CONFIG.replace("debug = False", "debug = True"), "the repaired edit should apply")
    line = next((line for line in result.text.splitlines() if "repaired" in line), "")
    expect("filePath" in line and "path" in line.replace("filePath", "") and "edits" in line,
           f"the result should carry the repair line naming each repair (filePath → path, edits), got {excerpt(result.text)}")
    _, found = prepare(lab, "edit", {"filePath": path, "edits": edits})
    expect(len(found) >= 2, f"two repairs (filePath, edits) should give a note each, got {excerpt(found)}")


@check("repair.then-validate")
def then_validate(lab: Lab) -> None:
    path, mode = a_name(), random.choice(["fast", "quick", "all"])
    lab.file(path, CONFIG)
    text = lab.error("edit", filePath=path, edits=[{"old_string": "debug = False"}], mode=mode).text
    expect("newText" in text and text.count("mode") >= 2,
           f"after the repairs, the error should list what is still wrong (the missing newText, the unknown mode) and echo the call, got {excerpt(text)}")
    problems = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("↺"))  # the notes may name both
    expect("missing required path" not in problems and "edits[0].oldText" not in problems,
           f"filePath and old_string were repaired: the error should not call path or oldText missing, got {excerpt(text)}")
    expect(repr(mode) in text, f"the error should echo what was received (mode={mode!r}), got {excerpt(text)}")
    expect((lab.tmp / path).read_text() == CONFIG, "a call that is still invalid must not change the file")


@check("repair.edit-applies")
def edit_applies(lab: Lab) -> None:
    path = a_name()
    lab.file(path, CONFIG)
    result = lab.ok("edit", file_path=path, old_string="retries = 3", new_string="retries = 9")
    expect((lab.tmp / path).read_text() == CONFIG.replace("retries = 3", "retries = 9"),
           f"edit(file_path, old_string, new_string), the shape other agents use, should apply; the file is {excerpt((lab.tmp / path).read_text())}")
    expect("+retries = 9" in result.text, f"the result should still carry the diff, got {excerpt(result.text)}")


@check("repair.stash-scenario")
def stash_scenario(lab: Lab) -> None:
    run = lab.scenario(7)
    fixed = (run.cwd / "stash/extract.py").read_text()
    expect('        "%a, %d %b %Y %H:%M:%S %z",\n' in fixed,
           f"after the scenario (filePath and a stringified edits), parse_date should list the offset-aware formats, got {excerpt(fixed[200:520])}")
    runs = [str(block.get("content")) for block in tool_results(run.messages) if "passed" in str(block.get("content"))]
    expect(runs and "1 failed, 1 passed" in runs[-1], "stash's suite should end at '1 failed, 1 passed' after the fix")
