"""The reference loop and the scripted model, end to end on the real tools."""
from __future__ import annotations

import json
import sys

import pytest


@pytest.fixture
def rover(solved_rover):
    import rover.agent
    import rover.model

    return sys.modules["rover"]


def test_a_script_that_expects_what_the_tools_did_not_say_stops_the_run(rover, tmp_path):
    turns = [
        {"content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {}}], "stop_reason": "tool_use"},
        {"expect": "no-such-file.txt", "content": [{"type": "text", "text": "?"}], "stop_reason": "end_turn"},
    ]
    agent = rover.agent.Agent(rover.model.ScriptedModel(turns), tmp_path)
    with pytest.raises(rover.model.ScriptError, match="turn 2 expected the tool results to contain 'no-such-file.txt'"):
        agent.run("look")


def test_a_script_too_short_for_the_run_says_so(rover, tmp_path):
    turns = [{"content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {}}], "stop_reason": "tool_use"}]
    agent = rover.agent.Agent(rover.model.ScriptedModel(turns), tmp_path)
    with pytest.raises(rover.model.ScriptError, match="has 1 turns"):
        agent.run("look")


def test_max_tokens_without_a_tool_call_asks_the_model_to_go_on(rover, tmp_path):
    turns = [
        {"content": [{"type": "text", "text": "The answer is"}], "stop_reason": "max_tokens"},
        {"content": [{"type": "text", "text": " 42."}], "stop_reason": "end_turn"},
    ]
    model = rover.model.ScriptedModel(turns)
    assert rover.agent.Agent(model, tmp_path).run("?") == " 42."
    assert "cut off" in model.calls[1]["messages"][-1]["content"]


def test_no_call_of_a_cut_off_reply_runs_and_each_gets_an_error(rover, tmp_path):
    calls = [{"type": "tool_use", "id": f"t{n}", "name": "bash", "input": {"command": f"touch ran{n}"}} for n in range(3)]
    model = rover.model.ScriptedModel([{"content": calls, "stop_reason": "max_tokens"},
                                       {"content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn"}])
    assert rover.agent.Agent(model, tmp_path).run("?") == "ok"
    assert not list(tmp_path.glob("ran*"))
    results = model.calls[1]["messages"][-1]["content"]
    assert [(block["tool_use_id"], block["is_error"]) for block in results] == [("t0", True), ("t1", True), ("t2", True)]


def test_the_turn_limit_raises(rover, tmp_path):
    turns = [{"content": [{"type": "tool_use", "id": f"t{n}", "name": "ls", "input": {}}], "stop_reason": "tool_use"} for n in range(5)]
    model = rover.model.ScriptedModel(turns)
    with pytest.raises(rover.agent.TurnLimitReached):
        rover.agent.Agent(model, tmp_path, max_turns=2).run("?")
    assert len(model.calls) == 2


def test_the_cli_replays_a_script_and_saves_the_transcript(rover, tmp_path, capsys):
    from rover.__main__ import main

    (tmp_path / "repo").mkdir()
    (tmp_path / "repo/hello.py").write_text("print('hi')\n")
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"turns": [
        {"content": [{"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "hello.py"}}], "stop_reason": "tool_use"},
        {"expect": "print('hi')", "content": [{"type": "text", "text": "It prints hi."}], "stop_reason": "end_turn"},
    ]}))
    code = main(["what does hello.py do?", "--model", f"scripted:{script}", "--cwd", str(tmp_path / "repo"),
                 "--transcript", str(tmp_path / "t.json")])
    out = capsys.readouterr().out
    assert code == 0
    assert "• Read hello.py (1 lines)" in out and "It prints hi." in out
    saved = json.loads((tmp_path / "t.json").read_text())
    assert [message["role"] for message in saved["messages"]] == ["user", "assistant", "user", "assistant"]
    assert saved["version"] == 2 and [len(request["messages"]) for request in saved["requests"]] == [1, 3]


def test_the_cli_without_key_or_script_is_one_line_and_exit_2(rover, monkeypatch, capsys):
    from rover.__main__ import main

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    assert main(["do something"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "ANTHROPIC_API_KEY" in err and "scripted:" in err
