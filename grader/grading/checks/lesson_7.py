"""Lesson 7: argument repair, through the seam (prepare_arguments) and through the registry's execute."""
from __future__ import annotations

import json
import random

from grader.grading.checks import CheckFailed, Lab, check, expect, result_text, shown, tool_results
from grader.grading.checks.probe import HERE as PROBE

SEAM = ("rover.tools.repair", "prepare_arguments")
CONFIG = "name = 'stash'\ndebug = False\nretries = 3\n"


def probe(lab: Lab, name: str, args: object) -> dict:
    """prepare_arguments(name, args) in the worker: what it returned or raised, and `args` as it was afterwards."""
    answer = lab.call(PROBE, "keeping_input", *SEAM, name, args)
    expect(isinstance(answer, dict) and isinstance(answer.get("args_after"), list), f"the call came back as {shown(answer)}")
    after = answer["args_after"][1] if len(answer["args_after"]) == 2 else None
    expect(after == args, f"prepare_arguments({name!r}, ...) changed the arguments it was given, in place: the model sent {shown(args)}, "
                          f"and after the call they read {shown(after)}. Repair a copy: the usage error must echo what the model sent")
    return answer


def prepare(lab: Lab, name: str, args: object) -> tuple[object, list]:
    answer = probe(lab, name, args)
    if "raised" in answer:
        raised = answer["raised"] if isinstance(answer["raised"], dict) else {}
        raise CheckFailed(f"prepare_arguments({name!r}, {shown(args, 160)}) raised {raised.get('type')}: {shown(raised.get('message'))}")
    result = answer.get("result")
    expect(isinstance(result, list) and len(result) == 2 and isinstance(result[1], list),
           f"prepare_arguments should return (args, notes) with notes a list, got a {type(result).__name__}: {shown(result)}")
    return result[0], result[1]


def refused(lab: Lab, name: str, args: dict) -> str:
    """The message of the ToolError prepare_arguments(name, args) must raise."""
    answer = probe(lab, name, args)
    raised = answer.get("raised") if isinstance(answer.get("raised"), dict) else {}
    expect(raised.get("type") == "ToolError",
           f"prepare_arguments({name!r}, {shown(args, 160)}) should refuse the call (raise ToolError): the two values disagree; "
           f"it {'raised ' + str(raised.get('type')) if raised else 'returned ' + shown(answer.get('result'), 160)}")
    return str(raised.get("message"))


def repaired_to(lab: Lab, name: str, sent: dict, wanted: dict, *named: str) -> list:
    """prepare_arguments(name, sent) gives `wanted`, with notes that mention each of `named`."""
    args, notes = prepare(lab, name, sent)
    expect(args == wanted, f"prepare_arguments({name!r}, {shown(sent, 160)}) should give {shown(wanted, 160)}, got {shown(args, 160)}")
    for word in named:
        expect(any(word in str(note) for note in notes), f"the notes should name the repair of {word}, got {shown(notes)}")
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
           f"a call that is already right should come back unchanged with no notes, got {shown([args, notes])}")
    command = {"command": f"cat {path}", "file_path": path}  # bash has no path: nothing to rename it to
    args, notes = prepare(lab, "bash", command)
    expect(args == command, f"bash has no path argument: file_path must stay as it came (for the validator to report), got {shown(args)}")
    for name, sent in (("read", [path]), ("read", f"path={path}"), ("read", None), (f"no_such_tool_{random.randint(10, 99)}", {"filePath": path})):
        what = "an unknown tool" if name.startswith("no_such_tool") else "arguments that are not a dict"
        try:
            args, notes = prepare(lab, name, sent)
        except CheckFailed as failed:
            raise CheckFailed(f"{what} should go back untouched, with no notes (R7.13): {failed}") from None
        expect(args == sent and not notes, f"prepare_arguments({name!r}, {shown(sent)}) should give it back untouched, with no notes "
                                           f"({what}, R7.13), got {shown([args, notes])}")


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
    args, _ = prepare(lab, "edit", {"path": path, "oldText": "debug = False"})  # a lone oldText: the validator will ask for newText
    expect("debug = False" in json.dumps(args),
           f"a top-level oldText without a newText must not be dropped (fold it into edits, or leave it), got {shown(args)}")
    expect("newText" not in json.dumps(args), f"repair is not leniency: a top-level oldText without a newText gets none made up "
                                              f"(the validator reports it missing); got {shown(args)}")
    other = {"oldText": "retries = 3", "newText": "retries = 5"}
    args, _ = prepare(lab, "edit", {"path": path, "edits": [other], **edit})
    edits = args.get("edits") if isinstance(args, dict) else None
    expect(isinstance(edits, list) and edits == [other, edit] and set(args) == {"path", "edits"},
           f"a top-level oldText/newText beside edits should be appended to the list, after the edits that were there: "
           f"expected edits {shown([other, edit])}, got {shown(args)}")


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
    windows = [{"oldText": "root = C:\\", "newText": "roots = [1, 2,]"}]  # a string that ends in a backslash, then one holding ',]'
    spelled = json.dumps(windows)[:-1] + ",]"
    repaired_to(lab, "edit", {"path": path, "edits": spelled}, {"path": path, "edits": windows}, "edits")
    quoted = [{"oldText": 'say("x,]")', "newText": 'say("y")'}]  # an escaped quote does not close the string
    repaired_to(lab, "edit", {"path": path, "edits": json.dumps(quoted)[:-1] + ",]"}, {"path": path, "edits": quoted}, "edits")
    for broken in ("replace debug with True", '[{"oldText": "debug = False", "newText": ', '[{"oldText": "a",} {"newText": "b",}]'):
        args, _ = prepare(lab, "edit", {"path": path, "edits": broken})
        expect(isinstance(args, dict) and args.get("edits") == broken,
               f"edits that still do not parse should stay exactly as they came, for the validator to name and echo; got {shown(args)}")
    lab.file(path, CONFIG)
    text = lab.error("edit", path=path, edits="replace debug with True").text
    expect(lab.files.read_text(path) == CONFIG, "a string that is not JSON must not change the file")
    expect("edits" in text and "replace debug with True" in text,
           f"edits that are not JSON should stay as they were, for the validator to name and echo, got {shown(text)}")


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
    args, _ = prepare(lab, "bash", {"command": "sleep 1", "timeout": "2.5"})
    expect(args == {"command": "sleep 1", "timeout": 2.5}, f"bash's timeout is a number in its schema: \"2.5\" is 2.5, got {shown(args)}")
    flags = {"pattern": "x", "ignore_case": "false", "literal": "true"}
    args, _ = prepare(lab, "search", flags)
    expect(args == {"pattern": "x", "ignore_case": False, "literal": True},
           f"\"true\" and \"false\" where the schema wants a boolean are true and false (not bool() of a string: \"false\" is not True); "
           f"search's {shown(flags)} gave {shown(args)}")
    for wrong in ["ten", "1.5", "", "3 lines"]:
        args, _ = prepare(lab, "read", {"path": path, "offset": wrong})
        expect(args == {"path": path, "offset": wrong},
               f"offset={wrong!r} is not a whole number: leave it for the validator, got {shown(args)}")
    digits = str(random.randint(100, 999))
    lab.ok("write", path="count.txt", content=digits)
    expect(lab.files.read_text("count.txt") == digits,
           f"write's content is a string in its schema: {digits!r} must be written as it is, got {shown(lab.files.read_text('count.txt'))}")
    lab.file(path, "".join(f"line {n}\n" for n in range(1, 13)))
    text = lab.ok("read", path=path, offset=str(offset), limit="2").text
    expect(f"{offset:>6}\tline {offset}" in text and f"line {offset + 2}" not in text,
           f"read with offset={str(offset)!r}, limit='2' should show lines {offset}-{offset + 1}, got {shown(text)}")


@check("repair.conflict")
def conflict(lab: Lab) -> None:
    first, second = a_name(), "other_" + a_name()
    for name, sent, values in (("read", {"path": first, "filePath": second}, (first, second)),
                               ("edit", {"path": first, "edits": [{"oldText": "debug = False", "old_string": "retries = 3", "newText": "x"}]},
                                ("debug = False", "retries = 3")),
                               ("edit", {"path": first, "edits": [{"oldText": "a", "newText": "debug = True", "new_str": "debug = 1"}]},
                                ("debug = True", "debug = 1"))):
        message = refused(lab, name, sent)
        expect(all(value in message for value in values),
               f"the refusal of {shown(sent)} should name both values ({' and '.join(values)}), got {shown(message)}")
    lab.file(first, CONFIG)
    text = lab.error("read", path=first, filePath=second).text
    expect(first in text and second in text, f"path and filePath disagree: the error should name both values ({first}, {second}), got {shown(text)}")
    text = lab.error("write", path=first, file_path=second, content="x = 1\n").text
    expect(not lab.files.exists(second) and lab.files.read_text(first) == CONFIG,
           "a call with two different paths must not write either file")
    expect(first in text and second in text, f"the write's error should name both paths, got {shown(text)}")
    lab.ok("read", path=first, filePath=first)  # the same value twice is no conflict
    text = lab.error("edit", path=first, edits=[{"oldText": "debug = False", "old_string": "retries = 3", "newText": "x = 1"}]).text
    expect("debug = False" in text and "retries = 3" in text and lab.files.read_text(first) == CONFIG,
           f"an edit with oldText and old_string that differ should be refused naming both, got {shown(text)}")


@check("repair.notes")
def notes(lab: Lab) -> None:
    path = a_name()
    lab.file(path, CONFIG)
    edits = json.dumps([{"oldText": "debug = False", "newText": "debug = True"}])
    result = lab.ok("edit", filePath=path, edits=edits)
    expect(lab.files.read_text(path) == CONFIG.replace("debug = False", "debug = True"), "the repaired edit should apply")
    line = next((line for line in result.text.splitlines() if "repaired" in line), "")
    expect("filePath" in line and "path" in line.replace("filePath", "") and "edits" in line,
           f"the result should carry the repair line naming each repair (filePath → path, edits), got {shown(result.text)}")
    _, found = prepare(lab, "edit", {"filePath": path, "edits": edits})
    expect(len(found) >= 2, f"two repairs (filePath, edits) should give a note each, got {shown(found)}")


@check("repair.then-validate")
def then_validate(lab: Lab) -> None:
    path, mode = a_name(), random.choice(["fast", "quick", "all"])
    lab.file(path, CONFIG)
    text = lab.error("edit", filePath=path, edits=[{"old_string": "debug = False"}], mode=mode).text
    expect("newText" in text and text.count("mode") >= 2,
           f"after the repairs, the error should list what is still wrong (the missing newText, the unknown mode) and echo the call, got {shown(text)}")
    problems = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("↺"))  # the notes may name both
    expect("missing required path" not in problems and "edits[0].oldText" not in problems,
           f"filePath and old_string were repaired: the error should not call path or oldText missing, got {shown(text)}")
    expect(repr(mode) in text, f"the error should echo what was received (mode={mode!r}), got {shown(text)}")
    args, _ = prepare(lab, "edit", {"path": path, "edits": [{"oldText": "debug = False"}]})
    edits = args.get("edits") if isinstance(args, dict) else None
    expect(isinstance(edits, list) and edits and "newText" not in edits[0],
           f"repair is not leniency: an edit without newText stays without it, for the validator to report; got {shown(args)}")
    expect(lab.files.read_text(path) == CONFIG, "a call that is still invalid must not change the file")


@check("repair.edit-applies")
def edit_applies(lab: Lab) -> None:
    path = a_name()
    lab.file(path, CONFIG)
    result = lab.ok("edit", file_path=path, old_string="retries = 3", new_string="retries = 9")
    expect(lab.files.read_text(path) == CONFIG.replace("retries = 3", "retries = 9"),
           f"edit(file_path, old_string, new_string), the shape other agents use, should apply; the file is {shown(lab.files.read_text(path))}")
    expect("+retries = 9" in result.text, f"the result should still carry the diff, got {shown(result.text)}")


@check("repair.stash-scenario")
def stash_scenario(lab: Lab) -> None:
    run = lab.scenario(7)
    fixed = lab.files.read_text(run.cwd / "stash/extract.py")
    expect('        "%a, %d %b %Y %H:%M:%S %z",\n' in fixed,
           f"after the scenario (filePath and a stringified edits), parse_date should list the offset-aware formats, got {shown(fixed[200:520])}")
    runs = [result_text(block) for block in tool_results(run.messages) if "passed" in result_text(block)]
    expect(runs and "1 failed, 1 passed" in runs[-1], "stash's suite should end at '1 failed, 1 passed' after the fix")
