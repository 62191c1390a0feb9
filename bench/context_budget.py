"""What the context budget saves: input tokens per turn of a 40-turn session, with and without trim,
and what stash's parse_date fix costs done by edit versus by write on a 400-line file.

    python bench/context_budget.py

Tokens are the offline estimate (JSON characters over 4) of each request: system prompt, tools and
messages. The session is lesson 8's scenario with ten more turns of reading and grepping before
the answer, replayed through the reference Rover on a fresh stash. Prints figures; asserts nothing.
"""
from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.course import kit  # noqa: E402
from grader.course.render import render  # noqa: E402

EXTRA = [("read", {"path": "stash/app.py"}), ("bash", {"command": "grep -rn '' --include=*.py ."}),
         ("read", {"path": "tests/test_feeds.py"}), ("bash", {"command": "cat stash/*.py tests/*.py"}),
         ("read", {"path": "stash/feeds.py"}), ("bash", {"command": "grep -rn '' --include=*.py ."}),
         ("read", {"path": "stash/extract.py"}), ("bash", {"command": "cat stash/*.py tests/*.py"}),
         ("read", {"path": "README.md"}), ("bash", {"command": "grep -rn 'def ' ."})]


def session() -> list[dict]:
    """Lesson 8's 30 turns, with ten more tool turns before the final answer: 40 model calls."""
    turns = json.loads(kit.lesson(8).script.read_text(encoding="utf-8"))["turns"]
    final = dict(turns[-1])
    final.pop("expect", None)
    extra = [{"content": [{"type": "tool_use", "id": f"toolu_bench_{n}", "name": name, "input": args}], "stop_reason": "tool_use"}
             for n, (name, args) in enumerate(EXTRA)]
    return [*turns[:-1], *extra, final]


def replay(workspace: Path, trimmed: bool) -> list[int]:
    """Input tokens of each request of the session, run in `workspace` on a fresh stash."""
    import rover.agent
    from rover.model import ScriptedModel
    from rover.prompt import system_prompt
    from rover.tools import TOOLS

    stash = workspace / "run" / "stash"
    shutil.rmtree(stash.parent, ignore_errors=True)
    shutil.copytree(kit.root() / "stash", stash, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    rover.agent.BUDGET = rover.context.BUDGET if trimmed else 10**12
    model = ScriptedModel(session())
    rover.agent.Agent(model, stash, system=system_prompt(list(TOOLS)), max_turns=50).run("Fix parse_date.")
    return [len(json.dumps([call["system"], call["messages"], call["tools"]])) // 4 for call in model.calls]


def by_edit_and_by_write(workspace: Path) -> tuple[dict[str, tuple[int, int]], int]:
    """(tokens the model writes for the call, tokens of the tool's answer) for the fix, done both ways."""
    from rover.tools import execute

    source = (kit.root() / "stash/stash/extract.py").read_text(encoding="utf-8")
    filler = "".join(f"\n\ndef field_{n}(entry: dict) -> str:\n    \"\"\"Field {n} of an entry, stripped.\"\"\"\n    return str(entry.get('f{n}', '')).strip()\n"
                     for n in range(76))
    big = source + filler
    assert big.count("\n") >= 400, big.count("\n")
    old = '    formats = ["%a, %d %b %Y %H:%M:%S", "%Y-%m-%dT%H:%M:%S"]'
    new = ('    formats = [\n        "%a, %d %b %Y %H:%M:%S %z",\n        "%Y-%m-%dT%H:%M:%S%z",\n'
           '        "%a, %d %b %Y %H:%M:%S",\n        "%Y-%m-%dT%H:%M:%S",\n    ]')
    calls = {"edit": {"path": "extract.py", "edits": [{"oldText": old, "newText": new}]},
             "write": {"path": "extract.py", "content": big.replace(old, new)}}
    figures = {}
    for name, args in calls.items():
        folder = workspace / f"fix-{name}"
        folder.mkdir()
        (folder / "extract.py").write_text(big, encoding="utf-8")
        result = execute(name, args, folder)
        assert not result.is_error and (folder / "extract.py").read_text() == big.replace(old, new), result.text
        figures[name] = (len(json.dumps(args)) // 4, len(result.text) // 4)
    return figures, big.count("\n")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-context-") as scratch:
        workspace = render(len(kit.lessons()) - 1, Path(scratch) / "ws", solved=True)
        sys.path.insert(0, str(workspace))
        import rover.context

        without, with_budget = replay(workspace, trimmed=False), replay(workspace, trimmed=True)
        print(f"Input tokens per turn, {len(without)}-turn session (BUDGET = {rover.context.BUDGET:,} tokens of messages)")
        print(f"{'turn':>4}  {'without':>8}  {'with':>8}")
        for number, (plain, trimmed) in enumerate(zip(without, with_budget), 1):
            print(f"{number:>4}  {plain:>8,}  {trimmed:>8,}")
        print(f"total {sum(without):>8,}  {sum(with_budget):>8,}   ({1 - sum(with_budget) / sum(without):.0%} fewer input tokens; "
              f"largest request {max(without):,} vs {max(with_budget):,})")
        figures, lines = by_edit_and_by_write(workspace)
        print(f"\nparse_date fix on a {lines}-line extract.py: tokens the model writes (the call) + tokens of the answer")
        for name, (call, answer) in figures.items():
            print(f"  {name:<5} {call:>6,} + {answer:>4,}   (and the call stays in the conversation, sent again every later turn)")
        print(f"  write costs {figures['write'][0] / figures['edit'][0]:.0f}x the output tokens of edit")


if __name__ == "__main__":
    main()
