"""Lessons 7-8 in the runtime: the repair line in the live transcript, tokens for scripted turns without usage."""
from __future__ import annotations

import io
import json


def test_a_repaired_call_shows_its_repair_line_in_the_transcript(solved_rover, tmp_path):
    from rich.console import Console

    from rover.display import Transcript

    (tmp_path / "a.py").write_text("x = 1\n")
    call = {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"filePath": "a.py"}}
    result = solved_rover.execute(call["name"], call["input"], tmp_path)
    assert result.text.startswith("↺ repaired: filePath → path\n\n") and "     1\tx = 1" in result.text
    screen = io.StringIO()
    Transcript(Console(file=screen, width=100, color_system=None)).tool(call, result)
    assert screen.getvalue().splitlines()[:2] == ["• Read a.py (1 lines)", "  ↺ repaired: filePath → path"]


def test_a_repaired_call_that_fails_shows_its_repair_line_once(solved_rover, tmp_path):
    from rich.console import Console

    from rover.display import Transcript

    call = {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"filePath": "missing.py"}}
    result = solved_rover.execute(call["name"], call["input"], tmp_path)
    assert result.is_error and result.text.startswith("↺ repaired: filePath → path")
    screen = io.StringIO()
    Transcript(Console(file=screen, width=100, color_system=None)).tool(call, result)
    assert screen.getvalue().count("↺ repaired") == 1, screen.getvalue()


def test_a_replay_stopped_by_an_unanswered_question_says_so(workspace):
    import subprocess
    import sys

    root = workspace(7, solved=True)
    env = {key: value for key, value in __import__("os").environ.items() if key not in ("ROVER_ANSWERS", "ANTHROPIC_API_KEY")}
    done = subprocess.run([sys.executable, "-m", "rover", "--model", "scripted:scenarios/lesson-7.json", "fix parse_date"],
                          cwd=root, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "no terminal to answer" in done.stderr and "ROVER_ANSWERS=y" in done.stderr, done.stderr
    assert "your tools answer differently" not in done.stderr


def test_scripted_turns_without_usage_get_estimated_tokens_that_follow_the_budget(solved_rover, tmp_path, monkeypatch):
    import rover.agent
    from rover.model import ScriptedModel

    (tmp_path / "big.txt").write_text("".join(f"line {n} " + "x" * 60 + "\n" for n in range(700)))
    reads = [{"content": [{"type": "tool_use", "id": f"toolu_{n}", "name": "read", "input": {"path": "big.txt"}}],
              "stop_reason": "tool_use"} for n in range(5)]
    turns = [*reads, {"content": [{"type": "text", "text": "Done."}], "stop_reason": "end_turn"}]

    def inputs(budget: int) -> list[int]:
        monkeypatch.setattr(rover.agent, "BUDGET", budget)
        model = ScriptedModel(json.loads(json.dumps(turns)))
        replies = []
        model_complete = model.complete
        monkeypatch.setattr(model, "complete", lambda *args: replies.append(model_complete(*args)) or replies[-1])
        rover.agent.Agent(model, tmp_path).run("Read it five times.")
        return [reply.usage["input_tokens"] for reply in replies]

    plain, trimmed = inputs(10**9), inputs(15_000)
    assert plain == sorted(plain) and plain[-1] > 3 * plain[1], plain
    assert trimmed[:2] == plain[:2] and max(trimmed) < 15_000 * 1.1 < plain[-1], (trimmed, plain)
