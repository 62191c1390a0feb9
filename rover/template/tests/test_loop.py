"""Lesson 0: a few visible tests of the loop. `workshop check` runs many more."""
from rover.agent import Agent
from rover.model import ScriptedModel


def test_a_reply_without_tool_calls_ends_the_run(tmp_path):
    model = ScriptedModel([{"content": [{"type": "text", "text": "Nothing to do."}], "stop_reason": "end_turn"}])
    assert Agent(model, tmp_path).run("Anything to do?") == "Nothing to do."


def test_a_tool_call_is_answered_with_its_result(tmp_path):
    (tmp_path / "hello.txt").write_text("hi\n")
    call = {"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {"path": "."}}
    model = ScriptedModel([
        {"content": [call], "stop_reason": "tool_use"},
        {"expect": "hello.txt", "content": [{"type": "text", "text": "One file."}], "stop_reason": "end_turn"},
    ])
    agent = Agent(model, tmp_path)
    assert agent.run("What is here?") == "One file."
    assert agent.messages[-2]["content"][0]["tool_use_id"] == "toolu_1"
