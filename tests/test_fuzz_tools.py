"""Every tool through `execute` on thousands of random JSON inputs: none may raise (lesson 7's promise).

Runs the reference Rover of the last lesson, so argument repair sits in front of every tool. Paths
stay relative and inside the test's folder, and bash only ever runs a few harmless commands, so a
random input can never write outside tmp_path or start something that lasts.
"""
from __future__ import annotations

import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

PATH_KEYS = ("path", "filePath", "file_path")
NOT_TEXT = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
TEXT = st.text(st.characters(blacklist_characters="/"), max_size=12)  # never a path that could lead out
SCALARS = NOT_TEXT | TEXT
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3), max_leaves=5)
NUMBERISH = st.integers(-5, 10**6).map(str) | st.sampled_from(["", " 7 ", "1.5", "ten", "+3", "-0", "1e3", "٣"])
RELATIVE = (st.sampled_from(["", ".", "a.py", "notes.txt", "sub", "sub/b.py", "missing.py", "new/dir/c.py", "x\x00y", "a.py/"])
            | st.from_regex(r"[\w -]{1,6}(/[\w -]{1,6}){0,2}/?", fullmatch=True))
EDIT = st.dictionaries(st.sampled_from(["oldText", "newText", "old_string", "new_str", "oldString", "extra"]),
                       st.sampled_from(["x = 1", "y = 2\n", "", "x"]) | JSON, max_size=3)
EDITS = st.lists(EDIT | JSON, max_size=3) | EDIT | EDIT.map(lambda edit: str(edit).replace("'", '"')) | JSON
SAFE_COMMANDS = st.sampled_from(["true", "echo hi", "exit 3", "printf 'a\\nb'", "ls", ""])


def value_for(key: str) -> st.SearchStrategy:
    if key in PATH_KEYS:
        return RELATIVE | NOT_TEXT
    if key == "command":
        return SAFE_COMMANDS | NOT_TEXT
    if key in ("offset", "limit", "timeout"):
        return NUMBERISH | st.none() | st.booleans() | st.integers() | st.floats(-1e6, 1e6)
    if key == "edits":
        return EDITS
    return JSON


def calls(keys: list[str]) -> st.SearchStrategy:
    """Argument dicts drawn from a tool's own keys, other agents' names and strangers, or no dict at all."""
    arguments = st.fixed_dictionaries({}, optional={key: value_for(key) for key in keys})
    strangers = st.dictionaries(st.text(string.ascii_uppercase, max_size=6), SCALARS, max_size=2)  # never one of PATH_KEYS
    return st.builds(lambda known, other: {**other, **known}, arguments, strangers) | JSON


KEYS = {
    "ls": ["path", "filePath"],
    "read": ["path", "filePath", "file_path", "offset", "limit"],
    "edit": ["path", "file_path", "edits", "oldText", "newText", "old_string", "new_string"],
    "write": ["path", "filePath", "content"],
    "search": ["pattern", "path", "glob", "ignore_case", "literal", "limit"],
    "bash": ["command", "timeout"],
}
EXAMPLES = {"ls": 150, "read": 300, "edit": 500, "write": 250, "search": 100, "bash": 100}  # with the two below: 2,200 calls
SAMPLED = 4  # the README's command draws a quarter of them (22 CPU s in all, the most of any unit test); --proofs=all all


@pytest.fixture
def examples(request):
    """examples(n): how many inputs to draw, n under `--proofs=all`, a quarter in the default run."""
    share = 1 if request.config.getoption("proofs") == "all" else SAMPLED
    return lambda count: max(25, count // share)


@pytest.fixture
def playground(solved_rover, tmp_path):
    (tmp_path / "a.py").write_text("x = 1\ny = 2\n")
    (tmp_path / "notes.txt").write_text("hello\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub/b.py").write_text("x = 1\n")
    return solved_rover, tmp_path


@pytest.mark.parametrize("tool", list(KEYS))
def test_no_random_call_makes_a_tool_raise(playground, tool, examples):
    tools, cwd = playground
    if tool not in tools.TOOLS:
        pytest.skip(f"{tool} is not in this course's registry")

    @settings(max_examples=examples(EXAMPLES[tool]), deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
    @given(calls(KEYS[tool]))
    def run(args):
        result = tools.execute(tool, args, cwd)
        assert type(result.text) is str and type(result.is_error) is bool

    run()
    leftovers = sorted(path.name for path in cwd.rglob(".*.tmp"))
    assert not leftovers, f"temp files left behind: {leftovers}"


def test_an_unknown_tool_and_odd_names_never_raise(playground, examples):
    tools, cwd = playground

    @settings(max_examples=examples(200), deadline=None, database=None)
    @given(st.text(max_size=10), JSON)
    def run(name, args):
        if name in tools.TOOLS:
            return
        result = tools.execute(name, args, cwd)
        assert result.is_error and type(result.text) is str

    run()


def test_repair_alone_never_raises_anything_but_a_refusal(playground, examples):
    tools, _ = playground
    from rover.tools.repair import prepare_arguments
    from rover.tools.result import ToolError

    @settings(max_examples=examples(600), deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.sampled_from([name for name in KEYS if name in tools.TOOLS]).flatmap(lambda name: st.tuples(st.just(name), calls(KEYS[name]))))
    def run(call):
        name, args = call
        before = repr(args)
        try:
            prepare_arguments(name, args)
        except ToolError:
            pass
        assert repr(args) == before, "prepare_arguments must not change the arguments it was given"

    run()
