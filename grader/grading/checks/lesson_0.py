"""Lesson 0: the agent loop, driven by a scripted model over the real registry."""
from __future__ import annotations

from grader.grading.checks import AgentRun, CheckFailed, Lab, check, excerpt, expect, tool_results


def use(call_id: str, name: str, **args) -> dict:
    return {"type": "tool_use", "id": call_id, "name": name, "input": args}


def say(text: str) -> dict:
    return {"type": "text", "text": text}


def turn(*blocks: dict, stop: str = "tool_use") -> dict:
    return {"content": list(blocks), "stop_reason": stop}


def done(text: str = "Done.") -> dict:
    return turn(say(text), stop="end_turn")


def results_sent(run: AgentRun, call: int) -> list[dict]:
    """The tool_result blocks in the last message of the model's `call`-th request (1-based)."""
    expect(len(run.calls) >= call, f"the model was called {len(run.calls)} time(s); expected at least {call}")
    last = run.calls[call - 1]["messages"][-1]
    expect(last.get("role") == "user", f"call {call} should end with a user message of tool results, got role {last.get('role')!r}")
    expect(isinstance(last.get("content"), list), f"tool results go in a list of blocks, got {excerpt(last.get('content'))}")
    return [block for block in last["content"] if block.get("type") == "tool_result"]


@check("loop.end-turn")
def end_turn(lab: Lab) -> None:
    run = lab.run_agent([done("All done: nothing to change.")], "Say what you would do.")
    expect(len(run.calls) == 1, f"one reply with no tool calls should end the run, but the model was called {len(run.calls)} times")
    expect(run.answer == "All done: nothing to change.", f"run() should return the final text, got {excerpt(run.answer)}")


@check("loop.tool-result")
def tool_result(lab: Lab) -> None:
    lab.file("notes.txt", "hello\n")
    run = lab.run_agent([turn(say("Looking."), use("toolu_01", "ls", path=".")), done()], "What is here?")
    results = results_sent(run, 2)
    expect(len(results) == 1, f"one tool call should get one tool_result, got {len(results)}")
    expect(results[0].get("tool_use_id") == "toolu_01", f"tool_use_id should be 'toolu_01', got {results[0].get('tool_use_id')!r}")
    expect("notes.txt" in str(results[0].get("content")), f"the result should carry ls's output (notes.txt), got {excerpt(results[0].get('content'))}")
    expect(not results[0].get("is_error"), "a successful call should not be marked is_error")


@check("loop.parallel-calls")
def parallel_calls(lab: Lab) -> None:
    lab.file("top.txt", "")
    lab.file("sub/inner.txt", "")
    run = lab.run_agent([turn(use("toolu_a", "ls", path="sub"), use("toolu_b", "ls", path=".")), done()], "List both.")
    results = results_sent(run, 2)
    ids = [block.get("tool_use_id") for block in results]
    expect(ids == ["toolu_a", "toolu_b"], f"both calls should be answered in one message, in order: expected ['toolu_a', 'toolu_b'], got {ids}")
    expect("inner.txt" in str(results[0].get("content")) and "top.txt" in str(results[1].get("content")),
           "each tool_result should carry the output of its own call")


@check("loop.history")
def history(lab: Lab) -> None:
    first = turn(say("Step one."), use("toolu_1", "ls", path="."))
    second = turn(say("Step two."), use("toolu_2", "ls", path="."))
    run = lab.run_agent([first, second, done()], "Look twice.")
    expect(len(run.calls) == 3, f"expected 3 model calls, got {len(run.calls)}")
    roles = [message.get("role") for message in run.calls[2]["messages"]]
    expect(roles == ["user", "assistant", "user", "assistant", "user"],
           f"the third call should carry the whole conversation (user, assistant, user, assistant, user), got {roles}")
    sent = run.calls[2]["messages"]
    expect(sent[1].get("content") == first["content"] and sent[3].get("content") == second["content"],
           "assistant messages should hold the reply's content blocks unchanged (text and tool_use)")
    expect("Look twice." in str(sent[0].get("content")), f"the first message should be the task, got {excerpt(sent[0].get('content'))}")


@check("loop.sends-tools")
def sends_tools(lab: Lab) -> None:
    run = lab.run_agent([turn(use("toolu_1", "ls")), done()], "Anything.")
    names = [tool["name"] for tool in lab.schemas()]
    for number, call in enumerate(run.calls, 1):
        sent = [tool.get("name") for tool in call["tools"] or []]
        expect(sent == names, f"call {number} should offer the tools from schemas() {names}, got {sent}")
        expect(call["system"] == "You are Rover.", f"call {number} should pass self.system, got {excerpt(call['system'])}")


@check("loop.errors-are-results")
def errors_are_results(lab: Lab) -> None:
    run = lab.run_agent([turn(use("toolu_x", "teleport", to="mars"), use("toolu_y", "ls", path="nowhere")), done()], "Try things.")
    results = results_sent(run, 2)
    expect(len(results) == 2, f"both calls need an answer, even failed ones; got {len(results)} tool_result(s)")
    flags = [bool(block.get("is_error")) for block in results]
    expect(flags == [True, True], f"an unknown tool and a missing directory should both come back with is_error true, got {flags}")
    expect("teleport" in str(results[0].get("content")), f"the error should say what went wrong, got {excerpt(results[0].get('content'))}")


@check("loop.max-tokens")
def max_tokens(lab: Lab) -> None:
    cut = turn(say("Writing the file"), use("toolu_cut", "touch", path="big.py", content="def half"), stop="max_tokens")
    run = lab.run_agent([cut, done("Sent a smaller call.")], "Write a big file.", spy=True)
    expect(not run.spy_calls, f"a tool_use from a max_tokens reply may be cut short and must not run, but it ran with {run.spy_calls}")
    results = results_sent(run, 2)
    expect([block.get("tool_use_id") for block in results] == ["toolu_cut"], "the cut-off call still needs a tool_result with its id")
    expect(results[0].get("is_error"), "that tool_result should be an error")
    expect(any(word in str(results[0].get("content")).lower() for word in ("max_tokens", "cut off", "truncated")),
           f"the error should tell the model its reply was cut off, got {excerpt(results[0].get('content'))}")


@check("loop.turn-limit")
def turn_limit(lab: Lab) -> None:
    forever = [turn(use(f"toolu_{n}", "ls")) for n in range(8)]
    run = lab.run_agent(forever, "Never stop.", max_turns=3, may_raise=True)
    if run.raised and run.raised.from_script:
        raise CheckFailed("the loop kept calling the model past max_turns=3")
    # raising TurnLimitReached (or any clear error) is a fine way to stop
    expect(len(run.calls) == 3, f"with max_turns=3 the model should be called 3 times, got {len(run.calls)}")


@check("loop.stash-scenario")
def stash_scenario(lab: Lab) -> None:
    run = lab.scenario(0)
    listing = " ".join(str(block.get("content")) for block in tool_results(run.messages))
    expect("stash/" in listing and "tests/" in listing, f"ls of the stash repo should show stash/ and tests/, got {excerpt(listing)}")
