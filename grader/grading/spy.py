"""The spy tool's evidence, judged by the grader: a spy switched off or silenced inside the worker is tampering,
never "no tool ran" (grader.grading.harness._SpyTool tells the grader of each call as it happens)."""
from __future__ import annotations

from typing import Any

from grader.grading.verdict import AgentRun, expect, result_text, tool_results


def untouched(run: AgentRun, model: Any, nonce: str) -> None:
    """The spy was offered to the model as the grader made it, and every `touch` call the loop answered with a result
    of the spy's was told to the grader: a spy switched off or silenced must not look like "no tool ran"."""
    offered = [tool for call in run.calls for tool in (call.get("tools") or []) if isinstance(tool, dict)]
    touch = [tool for tool in offered if tool.get("name") == "touch"]
    tampered = "the spy tool was tampered with: "
    expect(not offered or any(nonce in str(tool.get("description")) for tool in touch),
           tampered + "the grader's `touch` tool was not among the tools the loop offered the model")
    ran = 0
    for reply, call in zip(model.replies, run.calls[1:]):
        asked = {block.get("id") for block in reply if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("name") == "touch"}
        messages = call.get("messages") or [{}]
        answered = tool_results(messages[-1:]) if isinstance(messages, list) else []
        # the spy's own words (its nonce) prove it ran; an answer without them is the loop's (a cut-off call answered with
        # is_error false, say), which the check itself judges, naming that fault rather than crying tampering
        ran += sum(1 for block in answered if block.get("tool_use_id") in asked and nonce in result_text(block))
    expect(ran <= len(run.spy_calls), tampered + f"the loop sent back {ran} result(s) of `touch`, but the grader's spy was told of "
                                      f"{len(run.spy_calls)} call(s)")
