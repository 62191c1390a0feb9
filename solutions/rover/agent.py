"""Rover's loop: ask the model, run the tools it asks for, hand back what they said, repeat.

That is the whole agent. The model decides; the loop only carries messages both ways and
stops when the model has nothing left to ask for.
"""
from __future__ import annotations

from pathlib import Path

from rover.context import BUDGET, trim
from rover.display import Display, Silent
from rover.model import Model, Reply
from rover.tools import execute, schemas
from rover.tools.result import ToolResult

CUT_OFF = (
    "Your reply hit max_tokens before this tool call was complete, so it was not run: "
    "its arguments may be cut short. Send a smaller call (less content, or split the change)."
)


class TurnLimitReached(Exception):
    """The model kept asking for tools past the turn limit."""


class Agent:
    def __init__(self, model: Model, cwd: Path, system: str = "", max_turns: int = 30, display: Display | None = None):
        self.model = model
        self.cwd = cwd
        self.system = system
        self.max_turns = max_turns
        self.display = display or Silent()
        self.messages: list[dict] = []

    def run(self, task: str) -> str:
        """Work on `task` until the model ends its turn; return its final words."""
        self.messages.append({"role": "user", "content": task})
        for _ in range(self.max_turns):
            self.messages = trim(self.messages, BUDGET)  # lesson 8: old tool results give way to stubs
            reply = self.model.complete(self.system, self.messages, schemas())
            self.display.reply(reply)
            self.messages.append({"role": "assistant", "content": reply.content})
            results = self.tool_results(reply)
            if results:
                self.messages.append({"role": "user", "content": results})
            elif reply.stop_reason == "max_tokens":
                self.messages.append({"role": "user", "content": "Your reply was cut off at max_tokens. Continue."})
            else:
                return final_text(reply)
        raise TurnLimitReached(f"stopped after {self.max_turns} turns without an answer")

    def tool_results(self, reply: Reply) -> list[dict]:
        """One tool_result per tool_use, same ids, same order, all in one message."""
        results = []
        for call in reply.content:
            if call.get("type") != "tool_use":
                continue
            if reply.stop_reason == "max_tokens":
                result = ToolResult(CUT_OFF, is_error=True)  # its input may be silently truncated
            else:
                result = execute(call["name"], call["input"], self.cwd)
            self.display.tool(call, result)
            results.append(
                {"type": "tool_result", "tool_use_id": call["id"], "content": result.text, "is_error": result.is_error}
            )
        return results


def final_text(reply: Reply) -> str:
    return "\n".join(block["text"] for block in reply.content if block.get("type") == "text")
