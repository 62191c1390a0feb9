"""Lesson 0: the agent loop, driven by a scripted model over the real registry.

Ids, names, texts and counts vary per run, so only a loop that carries what it was given passes.
A tool_result's content may be a string or a list of text blocks: both are what the API takes.
"""
from __future__ import annotations

import random

from grader.grading.checks import AgentRun, CheckFailed, Lab, check, excerpt, expect, result_text, tool_results

WORDS = "rover stash feed parse date entry cache lumen harbor cedar ember fjord".split()


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
    messages = run.calls[call - 1]["messages"]
    last = messages[-1]
    expect(last.get("role") == "user", f"call {call} should end with a user message of tool results, got role {last.get('role')!r}")
    expect(isinstance(last.get("content"), list), f"tool results go in a list of blocks, got {excerpt(last.get('content'))}")
    start = max((n for n, message in enumerate(messages) if message.get("role") == "assistant"), default=-1) + 1
    holding = [message for message in messages[start:] if tool_results([message])]
    expect(len(holding) <= 1, f"the tool_results of one reply go together in one user message; call {call} got them in "
                              f"{len(holding)} user messages of {[len(tool_results([message])) for message in holding]} tool_result(s)")
    return [block for block in last["content"] if block.get("type") == "tool_result"]


def new_id(rng: random.Random) -> str:
    return f"toolu_{rng.getrandbits(48):012x}"


@check("loop.end-turn")
def end_turn(lab: Lab) -> None:
    words = " ".join(random.sample(WORDS, 4))
    run = lab.run_agent([done(f"All done: {words}.")], "Say what you would do.")
    expect(len(run.calls) == 1, f"one reply with no tool calls should end the run, but the model was called {len(run.calls)} times")
    expect(run.answer == f"All done: {words}.", f"run() should return the final text {excerpt(f'All done: {words}.')}, got {excerpt(run.answer)}")


@check("loop.tool-result")
def tool_result(lab: Lab) -> None:
    rng = random.Random()
    name, call_id = f"{rng.choice(WORDS)}_{rng.randint(100, 999)}.txt", new_id(rng)
    lab.file(name, "hello\n")
    run = lab.run_agent([turn(say("Looking."), use(call_id, "ls", path=".")), done()], "What is here?")
    results = results_sent(run, 2)
    expect(len(results) == 1, f"one tool call should get one tool_result, got {len(results)}")
    expect(results[0].get("tool_use_id") == call_id, f"tool_use_id should be the call's id {call_id!r}, got {results[0].get('tool_use_id')!r}")
    expect(name in result_text(results[0]), f"the result should carry the output of ls in the agent's cwd ({name}), got {excerpt(results[0].get('content'))}")
    expect(not results[0].get("is_error"), "a successful call should not be marked is_error")


@check("loop.parallel-calls")
def parallel_calls(lab: Lab) -> None:
    rng = random.Random()
    folders = rng.sample(WORDS, rng.randint(2, 4))
    for folder in folders:
        lab.file(f"{folder}/in_{folder}.txt", "")
    ids = [new_id(rng) for _ in folders]
    run = lab.run_agent([turn(*(use(call_id, "ls", path=folder) for call_id, folder in zip(ids, folders))), done()], "List them all.")
    results = results_sent(run, 2)
    sent = [block.get("tool_use_id") for block in results]
    expect(sent == ids, f"all {len(ids)} calls should be answered in one message, in order: expected {ids}, got {sent}")
    for block, folder in zip(results, folders):
        expect(f"in_{folder}.txt" in result_text(block), f"the tool_result for ls {folder} should carry its own output (in_{folder}.txt), got {excerpt(block.get('content'))}")


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
    tool = random.choice(["teleport", "fly", "summon", "warp"])
    run = lab.run_agent([turn(use("toolu_x", tool, to="mars"), use("toolu_y", "ls", path="nowhere")), done()], "Try things.")
    results = results_sent(run, 2)
    expect(len(results) == 2, f"both calls need an answer, even failed ones; got {len(results)} tool_result(s)")
    flags = [bool(block.get("is_error")) for block in results]
    expect(flags == [True, True], f"an unknown tool and a missing directory should both come back with is_error true, got {flags}")
    expect(tool in result_text(results[0]), f"the error should be execute()'s answer, which names the tool {tool!r}; got {excerpt(results[0].get('content'))}")


@check("loop.max-tokens")
def max_tokens(lab: Lab) -> None:
    rng = random.Random()
    ids = [new_id(rng) for _ in range(rng.randint(2, 4))]
    calls = [use(call_id, "touch", path=f"part{number}.py", content="def half") for number, call_id in enumerate(ids, 1)]
    run = lab.run_agent([turn(say("Writing the files"), *calls, stop="max_tokens"), done("Sent smaller calls.")], "Write big files.", spy=True)
    expect(not run.spy_calls, f"no tool_use of a max_tokens reply may run (any input may be cut short), but {len(run.spy_calls)} of {len(ids)} ran: {run.spy_calls}")
    expect(len(run.calls) >= 2, f"a reply cut off at max_tokens with {len(ids)} tool calls is not the end: the loop should answer each "
                                f"call with a CUT_OFF tool_result (is_error true) and call the model again; it stopped after one call "
                                f"and returned {excerpt(run.answer)}")
    results = results_sent(run, 2)
    sent = [block.get("tool_use_id") for block in results]
    expect(sent == ids, f"each of the {len(ids)} cut-off calls still needs a tool_result with its id, in order: expected {ids}, got {sent}")
    flags = [bool(block.get("is_error")) for block in results]
    expect(all(flags) and all(result_text(block).strip() for block in results),
           f"each of those tool_results should be an error (is_error true) that tells the model its reply was cut off; got is_error {flags}, contents {excerpt([result_text(block) for block in results])}")


@check("loop.turn-limit")
def turn_limit(lab: Lab) -> None:
    limit = random.randint(2, 6)
    forever = [turn(use(f"toolu_{n}", "ls")) for n in range(limit + 3)]
    run = lab.run_agent(forever, "Never stop.", max_turns=limit, may_raise=True)
    if run.raised and run.raised.from_script:
        raise CheckFailed(f"with max_turns={limit} the loop kept calling the model: a call {limit + 1} was made")
    expect(len(run.calls) == limit, f"with max_turns={limit} the model should be called {limit} times, got {len(run.calls)}")
    expect(run.raised is not None, f"after {limit} turns without an answer, run() should raise TurnLimitReached; it returned {excerpt(run.answer)}")
    words = " ".join(random.sample(WORDS, 3))
    last = lab.run_agent(forever[:limit - 1] + [done(f"Finished: {words}.")], "Stop in time.", max_turns=limit, may_raise=True)
    expect(last.raised is None and last.answer == f"Finished: {words}.",
           f"with max_turns={limit}, a reply that ends the turn on call {limit} (the last allowed one) is an answer: run() should "
           f"return {excerpt(f'Finished: {words}.')}, but it " + (f"raised {last.raised.type}: {excerpt(last.raised.message, 120)}"
                                                                   if last.raised else f"returned {excerpt(last.answer)}"))


@check("loop.stash-scenario")
def stash_scenario(lab: Lab) -> None:
    run = lab.scenario(0)
    listing = " ".join(result_text(block) for block in tool_results(run.messages))
    expect("stash/" in listing and "tests/" in listing, f"ls of the stash repo should show stash/ and tests/, got {excerpt(listing)}")


@check("loop.display")
def display(lab: Lab) -> None:
    rng = random.Random()
    name, call_id = f"{rng.choice(WORDS)}_{rng.randint(100, 999)}.txt", new_id(rng)
    lab.file(name, "hello\n")
    replies = [turn(say(f"Looking for {rng.choice(WORDS)}."), use(call_id, "ls", path=".")), done(f"Found {name}.")]
    run = lab.run_agent(replies, "What is here?", display=True)
    events = [event.get("event") for event in run.shown]
    expect(events.count("reply") == len(replies), f"each of the model's {len(replies)} replies should be shown with "
                                                   f"self.display.reply(reply); display.reply was called {events.count('reply')} time(s)")
    expect(events.count("tool") == 1, f"the one ls call should be shown with self.display.tool(block, result) (the "
                                      f"'• List .' line); display.tool was called {events.count('tool')} time(s)")
    expect(events == ["reply", "tool", "reply"], f"the display should follow the run: the reply, its tool call, then the "
                                                 f"final reply; got {events}")
    shown_replies = [event.get("content") for event in run.shown if event.get("event") == "reply"]
    expect(shown_replies == [reply["content"] for reply in replies],
           f"display.reply should get each reply as the model sent it; got contents {excerpt(shown_replies)}")
    tool = next(event for event in run.shown if event.get("event") == "tool")
    expect(tool.get("id") == call_id, f"display.tool should get the tool_use block (id {call_id!r}), got id {tool.get('id')!r}")
    expect(name in str(tool.get("text")) and tool.get("is_error") is False,
           f"display.tool should get ls's result (listing {name}, is_error false), got {excerpt(tool.get('text'))}, is_error {tool.get('is_error')!r}")
