"""Lesson 8: the context budget, through the seam (trim) and through the student's loop."""
from __future__ import annotations

import json
import random

from grader.grading.checks import CheckFailed, Lab, check, excerpt, expect, result_text, shown, tool_results
from grader.grading.checks.probe import HERE as PROBE
from grader.grading.checks.lesson_0 import done, say, turn, use

BUDGET = 20_000  # the lesson's BUDGET: the text asks to keep it
SLACK = 1.15  # estimates differ a little (what is counted, JSON or not); the budget must hold within this


def tokens(value: object) -> int:
    """The grader's own estimate: the JSON text over 4, as the lesson describes."""
    return len(json.dumps(value, ensure_ascii=False)) // 4


def numbered(size: int, tag: str) -> str:
    """About `size` characters of read-like output, different for every tag."""
    lines, total = [], 0
    while total < size:
        line = f"{len(lines) + 1:>6}\t{tag} line {len(lines) + 1}: " + "x" * random.randint(30, 70) + "é" * (len(lines) % 3 * 8)
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines)


def prose(size: int) -> str:
    """About `size` characters of the model's reasoning, or of a long task."""
    words = ["the", "feed", "parser", "drops", "dates", "when", "an", "offset", "is", "given", "so", "check", "each", "format"]
    return " ".join(random.choices(words, k=size // 5))[:size]


def conversation(sizes: list[int], latest: int = 1500, talk: int = 0, task: str | list = "Find out why the feed parser drops dates.",
                 together: int = 1) -> tuple[list[dict], list[dict]]:
    """A task, then one read or bash call per size with its result, the last one of `latest` characters.

    `talk`: characters of the model's words before each call; `together`: calls per turn, answered in one message.
    """
    messages, calls = [{"role": "user", "content": task}], []
    sized = [*sizes, latest]
    for first in range(0, len(sized), together):
        blocks, results = [say(prose(talk) if talk else f"Step {first + 1}.")], []
        for number, size in enumerate(sized[first:first + together], first + 1):
            if number % 3:
                call = use(f"toolu_{number:02}", "read", path=f"stash/module_{number}_{random.randint(100, 999)}.py")
            else:
                call = use(f"toolu_{number:02}", "bash", command=f"python -m pytest -k case_{number}_{random.randint(100, 999)}")
            calls.append(call)
            blocks.append(call)
            text = numbered(size, call["id"])
            content = [{"type": "text", "text": text}] if number % 5 == 0 else text  # a list of text blocks is a content too
            results.append({"type": "tool_result", "tool_use_id": call["id"], "content": content, "is_error": number % 4 == 0})
        messages += [{"role": "assistant", "content": blocks}, {"role": "user", "content": results}]
    return messages, calls


def trim(lab: Lab, messages: list[dict], budget: int) -> list[dict]:
    sent = json.loads(json.dumps(messages))
    answer = lab.call(PROBE, "keeping_input", "rover.context", "trim", sent, budget)
    expect(isinstance(answer, dict) and isinstance(answer.get("args_after"), list), f"the call came back as {shown(answer, 200)}")
    if "raised" in answer:
        raise CheckFailed(f"trim(messages, {budget:,}) raised {shown(answer['raised'], 400)}")
    after = answer["args_after"][0] if answer["args_after"] else None
    if after != messages:
        changed = next((n for n, (a, b) in enumerate(zip(messages, after or [])) if a != b), None)
        raise CheckFailed(f"trim changed the messages it was given, in place (message {changed}: {shown(after[changed] if changed is not None else after, 200)}); "
                          "return new lists and dicts, and leave the transcript as it was")
    trimmed = answer.get("result")
    expect(isinstance(trimmed, list) and all(isinstance(message, dict) for message in trimmed),
           f"trim should return a list of messages (dicts), got a {type(trimmed).__name__}: {excerpt(trimmed)}")
    return trimmed


def result_texts(messages: list[dict]) -> list[str]:
    """Each tool result's text: a string content, or the text blocks of a list content, joined."""
    texts = []
    for block in tool_results(messages):
        content = block.get("content")
        if isinstance(content, list):
            content = "".join(str(part.get("text", "")) if isinstance(part, dict) else json.dumps(part) for part in content)
        texts.append(content if isinstance(content, str) else json.dumps(content))
    return texts


def elided(before: list[dict], after: list[dict], budget: int) -> list[int]:
    """Which tool results (0-based, in order) trim replaced; fails when it replaced none."""
    old, new = result_texts(before), result_texts(after)
    expect(len(old) == len(new), f"trim should keep every tool_result ({len(old)}), it returned {len(new)}")
    changed = [index for index, (a, b) in enumerate(zip(old, new)) if a != b]
    expect(changed, f"the conversation is about {tokens(before):,} tokens, over the budget of {budget:,}: "
                    "trim should replace old tool results with stubs, but it changed none")
    return changed


def over(lab: Lab, sizes: list[int], budget: int, latest: int = 1500) -> tuple[list[dict], list[dict], list[dict], list[int]]:
    messages, calls = conversation(sizes, latest)
    trimmed = trim(lab, messages, budget)
    return messages, calls, trimmed, elided(messages, trimmed, budget)


def stopped_short(messages: list[dict], trimmed: list[dict], budget: int, other: str = "") -> str:
    """Why trim stopped while still over the budget, as far as its stubs tell: when what they saved in characters just
    passed the excess, which is in tokens, it counted in the wrong unit; otherwise `other`, a cause the caller can tell,
    or how far over it was and what it saved."""
    excess, saved = tokens(messages) - budget, tokens(messages) - tokens(trimmed)
    chars = [len(json.dumps(before.get("content"), ensure_ascii=False)) - len(json.dumps(after.get("content"), ensure_ascii=False))
             for before, after in zip(tool_results(messages), tool_results(trimmed)) if before.get("content") != after.get("content")]
    if len(chars) >= 2 and saved < excess and sum(chars[:-1]) * 0.95 < excess <= sum(chars) * 1.05:
        return (f": it stopped once its {len(chars)} stubs had saved about {sum(chars):,} characters, past the {excess:,} tokens it was "
                f"over, so it counts what a stub saves in characters; the excess is in tokens (they saved about {saved:,}): subtract "
                f"estimate_tokens(old content) - estimate_tokens(stub)")
    return other or f": it was {excess:,} tokens over and its stubs saved only about {saved:,}; go on until the estimate fits (what a stub saves counts in tokens, as the excess does)"


def some_sizes(count: int = 9) -> list[int]:
    return [random.randint(6_000, 12_000) for _ in range(count)]


@check("context.under-budget")
def under_budget(lab: Lab) -> None:
    messages, _ = conversation(some_sizes(3))
    kept = trim(lab, messages, tokens(messages) + 500)
    expect(kept == messages, f"a conversation under the budget should be sent as it is; trim changed it to {excerpt(kept)}")
    exactly = lab.call("rover.context", "estimate_tokens", messages)  # the lesson's own estimate, given
    expect(isinstance(exactly, int), f"estimate_tokens(messages) should give a number, got {shown(exactly)}")
    kept = trim(lab, messages, exactly)
    expect(kept == messages, f"a conversation of exactly the budget ({exactly:,} tokens by estimate_tokens) is not over it, and should be sent "
                             f"as it is; trim changed it to {excerpt(kept)}")
    over(lab, some_sizes(), 10_000)


@check("context.whole-conversation")
def whole_conversation(lab: Lab) -> None:
    task = "Find out why the feed parser drops dates. " + prose(random.randint(12_000, 16_000))  # a long task, pasted in
    messages, _ = conversation([random.randint(5_000, 7_000) for _ in range(8)], talk=random.randint(7_000, 9_000), task=task)
    messages[1]["content"].append(use("toolu_write", "write", path="notes.md", content=prose(3_000)))  # a long input, old
    messages[2]["content"].append({"type": "tool_result", "tool_use_id": "toolu_write", "content": "Created notes.md: wrote 3000 bytes.", "is_error": False})
    results = sum(tokens(block.get("content")) for block in tool_results(messages))
    budget = tokens(messages) - random.randint(2_500, 3_500)  # over, by the model's words and the task more than the results
    trimmed = trim(lab, messages, budget)
    expect(results < budget, "the grader's conversation should have results under the budget on their own")
    expect(trimmed != messages, f"the whole conversation is about {tokens(messages):,} tokens, over the budget of {budget:,}, though its tool results "
                                f"alone are only about {results:,}: count everything that is sent (estimate_tokens(messages)), and trim it")
    expect(tokens(trimmed) <= budget * SLACK, f"from about {tokens(messages):,} tokens, trim should get under the budget of {budget:,}, "
                                              f"but what it returned is still about {tokens(trimmed):,}")
    expect(trimmed[0] == messages[0], f"the task must be sent as it was, however long; it became {excerpt(trimmed[0].get('content'), 120)}")
    for number, (before, after) in enumerate(zip(messages, trimmed)):
        if before["role"] == "assistant":
            expect(after == before, f"what the assistant said (message {number}) must stay as it was; it became {excerpt(after, 160)}")


@check("context.fits-budget")
def fits_budget(lab: Lab) -> None:
    budget = random.randint(9_000, 12_000)
    messages, _, trimmed, _ = over(lab, [random.randint(20, 60), *some_sizes(10)], budget)
    tiny_before, tiny_after = result_texts(messages)[0], result_texts(trimmed)[0]  # the oldest result, a small one
    expect(len(tiny_after) <= len(tiny_before), f"a stub must be shorter than what it replaces: the oldest result, of {len(tiny_before)} "
                                                f"characters, became a longer stub, {excerpt(tiny_after, 120)}; leave small results as they are")
    expect(tokens(trimmed) <= budget * SLACK,
           f"from about {tokens(messages):,} tokens, trim should get under the budget of {budget:,} (about 4 characters a token), "
           f"but what it returned is still about {tokens(trimmed):,}" + stopped_short(messages, trimmed, budget))
    counted = lab.call("rover.context", "estimate_tokens", trimmed)  # the lesson's own measure, given
    expect(isinstance(counted, int) and counted <= budget + 10,
           f"by estimate_tokens, what trim returned is {counted} tokens, over the budget of {budget:,}: subtract what each stub saves "
           f"(the old content's tokens minus the stub's own), counted as estimate_tokens counts them, and go on until it fits")


@check("context.oldest-first")
def oldest_first(lab: Lab) -> None:
    sizes = [7_000, 9_000, 6_000, 8_000, 7_500, 11_000]
    messages, _ = conversation(sizes)
    stubbed = json.loads(json.dumps(messages))
    for message in stubbed[2:10:2]:  # the four oldest results as short stubs: what a good trim gets to
        message["content"][0]["content"] = "[elided: " + "s" * 200 + "]"
    budget = tokens(stubbed) + 400
    trimmed = trim(lab, messages, budget)
    replaced = elided(messages, trimmed, budget)
    expect(replaced == list(range(len(replaced))),
           f"the oldest results go first: trim replaced results {[n + 1 for n in replaced]} of {len(sizes) + 1}, not a run from the first")
    expect(len(sizes) - 1 not in replaced,
           f"with a budget of {budget:,} tokens the most recent old results fit; trim replaced results {[n + 1 for n in replaced]}, "
           f"including result {len(sizes)}, which it could have kept")
    messages, _ = conversation([8_000, 8_000, 8_000, 6_000, 6_000, 6_000], together=3)  # three results answer each turn
    budget = tokens(messages) - 1_000  # one stub saves enough
    replaced = elided(messages, trim(lab, messages, budget), budget)
    expect(replaced == [0], f"over by about 1,000 tokens, eliding the oldest result (about 2,000) is enough: stop as soon as it fits, "
                            f"also within a message of several results; trim replaced results {[n + 1 for n in replaced]}")


@check("context.stub-one-line")
def stub_one_line(lab: Lab) -> None:
    messages, calls = conversation(some_sizes())
    script = "python - <<'EOF'\n" + "".join(f"print('step {n}', {n} * {n})\n" for n in range(120)) + "EOF"
    calls[2]["input"]["command"] = script  # an old bash call of some 2,800 characters over 120 lines: its stub stays one short line
    trimmed = trim(lab, messages, 10_000)
    replaced, texts = elided(messages, trimmed, 10_000), result_texts(trimmed)
    for index in replaced:
        stub = texts[index]
        expect("\n" not in stub.strip() and len(stub) <= 400,
               f"an elided result should be one line of text (at most 400 characters), result {index + 1} became {excerpt(stub)}")


@check("context.stub-says-how")
def stub_says_how(lab: Lab) -> None:
    for together in (1, 3):  # then parallel calls: three results answer one turn
        messages, calls = conversation(some_sizes(9), together=together)
        trimmed = trim(lab, messages, 10_000)
        replaced, texts = elided(messages, trimmed, 10_000), result_texts(trimmed)
        for index in replaced:
            call = calls[index]
            wanted = call["input"].get("path") or call["input"].get("command")
            expect(call["name"] in texts[index] and wanted in texts[index],
                   (f"{together} calls ran in one turn: the stub of each result should name its own call (by tool_use_id), " if together > 1 else
                    "the stub should say what was elided and how to get it back: ") +
                   f"the tool ({call['name']}) and its input ({wanted}); result {index + 1} became {excerpt(texts[index])}")
    expect(any(index % 3 for index in replaced), f"with parallel calls, more than the first call of a turn should be elided; got {[n + 1 for n in replaced]}")


@check("context.pairs")
def pairs(lab: Lab) -> None:
    task = [{"type": "text", "text": "Find out why the feed parser drops dates. " + prose(2_000)}]  # a task sent as text blocks
    messages, _ = conversation(some_sizes(), task=task)
    trimmed = trim(lab, messages, 10_000)
    elided(messages, trimmed, 10_000)
    expect([m.get("role") for m in trimmed] == [m.get("role") for m in messages],
           f"trim should keep every message, in order ({len(messages)}), got {len(trimmed)} with roles {[m.get('role') for m in trimmed][:8]}...")
    expect(trimmed[0] == messages[0], f"the task (the first message, a list of text blocks here) must be kept as it was: only tool_result "
                                      f"blocks are trimmed; got {excerpt(trimmed[0])}")
    for number, (before, after) in enumerate(zip(messages, trimmed)):
        if before["role"] == "assistant":
            expect(after == before, f"assistant message {number} (with its tool_use) should be sent as it was, got {excerpt(after)}")
    for before, after in zip(tool_results(messages), tool_results(trimmed)):
        expect(after.get("tool_use_id") == before["tool_use_id"] and after.get("is_error") == before["is_error"] and after.get("type") == "tool_result",
               f"a trimmed tool_result keeps its type, tool_use_id ({before['tool_use_id']}) and is_error ({before['is_error']}), got {excerpt({k: v for k, v in after.items() if k != 'content'})}")


@check("context.latest-turn")
def latest_turn(lab: Lab) -> None:
    budget = random.randint(4_000, 6_000)
    messages, _, trimmed, replaced = over(lab, some_sizes(5), budget, latest=budget * 4 + 20_000)  # over by more than any one result's characters
    expect(trimmed[-2:] == messages[-2:],
           f"the latest turn (the last tool_use and its result) must never be touched, even when it alone passes the budget; got {excerpt(trimmed[-1])}")
    kept = [n for n in range(5) if n not in replaced]
    listed = (f": result {kept[0] + 1}, whose content is a list of text blocks, was left whole; such a content is a tool result too"
              if kept and isinstance(tool_results(messages)[kept[0]]["content"], list) else "")
    expect(replaced == list(range(5)), f"with the latest turn over the budget on its own, every older result should be elided, got {[n + 1 for n in replaced]}"
                                       + (stopped_short(messages, trimmed, budget, listed) if replaced == list(range(len(replaced))) else listed))
    task = [{"role": "user", "content": "Summarise this log:\n" + numbered(budget * 4 + 4_000, "log")}]  # no assistant turn yet
    expect(trim(lab, task, budget) == task, "a conversation that is only its task, over the budget, has nothing to elide: send it as it is")


@check("context.stable")
def stable(lab: Lab) -> None:
    messages, _, first, replaced = over(lab, some_sizes(), 10_000)
    later, _ = conversation([random.randint(6_000, 9_000)])
    for number, message in enumerate(later[1:], 1):  # one more turn, with ids of its own
        for block in message["content"]:
            for key in ("id", "tool_use_id"):
                if key in block:
                    block[key] = f"toolu_later_{(number + 1) // 2}"
    longer = first + later[1:]
    before = result_texts(first)
    for how, again in (("trimming the trimmed conversation again", trim(lab, longer, tokens(longer) - 500)),  # over again: more must go
                       ("trimming the whole conversation again, one turn longer (a loop that does not store what trim returned)",
                        trim(lab, messages + later[1:], 10_000))):
        after = result_texts(again)
        for index in replaced:
            at = next((n for n, (a, b) in enumerate(zip(before[index], after[index])) if a != b), min(len(before[index]), len(after[index])))
            expect(after[index] == before[index],
                   f"{how} must give the same stub (so the front of the conversation stays the same and the prompt cache keeps hitting); "
                   f"result {index + 1} changed from its character {at}: it was ...{excerpt(before[index][max(0, at - 40):at + 80])} "
                   f"and became ...{excerpt(after[index][max(0, at - 40):at + 80])}")


@check("context.loop-trims")
def loop_trims(lab: Lab) -> None:
    budget = lab.call(PROBE, "value", "rover.context", "BUDGET")
    expect(budget == BUDGET, f"rover/context.py should keep BUDGET = {BUDGET:_} (the checks use it), found {shown(budget)}")
    names = [f"big_{random.randint(100, 999)}_{n}.py" for n in range(3)]
    for name in names:
        lab.file(name, "".join(f"value_{n} = {'7' * random.randint(40, 60)}\n" for n in range(800)))
    reads = [names[n % 3] for n in range(8)]
    script = [turn(say(f"Reading {name}."), use(f"toolu_{n}", "read", path=name)) for n, name in enumerate(reads)]
    run = lab.run_agent([*script, done("Read them all.")], "Read the big files.")
    expect(len(run.calls) == len(script) + 1, f"the run should take {len(script) + 1} model calls, it took {len(run.calls)}")
    last = run.calls[-1]["messages"]
    sent = tool_results(last)
    expect(len(sent) == len(reads), f"the last call should still carry all {len(reads)} tool results (some as stubs), got {len(sent)}")
    first = result_text(sent[0])
    if first.count("\n") >= 700:  # sent whole: the loop, or trim?
        whole = f"by the last turn the conversation is about {tokens(last):,} tokens, far over BUDGET, yet your loop sent the first read's result whole ({len(first):,} characters)"
        expect(result_texts(trim(lab, last, BUDGET))[0] == first,
               f"{whole}, though your trim elides it when given those messages: the loop must send what trim returns, before every "
               f"model call (self.messages = trim(self.messages, BUDGET)); trim leaves the list it is given as it was")
        raise CheckFailed(f"{whole}, and trim(messages, BUDGET) on those messages leaves it whole too: make trim elide old results (the other checks say how)")
    expect(len(first) <= 400 and reads[0] in first,
           f"by the last turn the conversation is far over the budget: the first read's result should be sent as a one-line stub (at most "
           f"400 characters) naming {reads[0]}; your loop sent {excerpt(first, 120)}")
    expect(result_text(sent[-1]).count("\n") >= 700, "the latest read's result should be sent whole")
    expect(tokens(last) <= BUDGET * SLACK, f"the last call sent about {tokens(last):,} tokens; with BUDGET = {BUDGET:,} it should stay under that")


@check("context.stash-scenario")
def stash_scenario(lab: Lab) -> None:
    run = lab.scenario(8)
    largest = max(tokens(call["messages"]) for call in run.calls)
    expect(largest <= BUDGET * SLACK,
           f"the messages of every request (what trim counts; the system prompt and tools come on top) should stay under BUDGET "
           f"({BUDGET:,} tokens) in the long session; its largest were about {largest:,}")
    fixed = lab.files.read_text(run.cwd / "stash/extract.py")
    expect('"%a, %d %b %Y %H:%M:%S %z"' in fixed, "by its end the session fixes parse_date")
    runs = [result_text(block) for block in tool_results(run.messages) if "passed" in result_text(block)]
    expect(runs and "1 failed, 1 passed" in runs[-1], "stash's suite should end at '1 failed, 1 passed' after the fix")
