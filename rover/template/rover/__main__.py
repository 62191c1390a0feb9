"""`python -m rover "task"`: run Rover on the target repo and watch it work."""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from rover.agent import Agent, TurnLimitReached
from rover.display import Silent, Transcript
from rover.model import Model, ScriptedModel, ScriptError
from rover.prompt import system_prompt
from rover.tools import TOOLS

DEFAULT_MODEL = "claude-sonnet-5-5"
WORKSPACE = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        model = _model(args.model or os.environ.get("ROVER_MODEL") or DEFAULT_MODEL)
    except ValueError as problem:
        print(f"rover: {problem}", file=sys.stderr)
        return 2
    cwd = Path(args.cwd).resolve()
    if not cwd.is_dir():
        print(f"rover: --cwd {args.cwd} is not a directory; point it at the repo Rover should work on.", file=sys.stderr)
        return 2
    display = Silent() if args.quiet else Transcript()
    agent = Agent(model, cwd, system=system_prompt(list(TOOLS)), max_turns=args.max_turns, display=display)
    try:
        answer = agent.run(args.task)
        if args.quiet:
            print(answer)
        return 0
    except (ScriptError, TurnLimitReached) as stop:
        print(f"rover: {stop}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("rover: interrupted", file=sys.stderr)
        return 130
    except Exception as failure:
        from rover.live import describe_failure

        print(f"rover: {describe_failure(failure)}", file=sys.stderr)
        return 1
    finally:
        if args.transcript:
            Path(args.transcript).write_text(json.dumps(agent.messages, indent=2), encoding="utf-8")


def _model(name: str) -> Model:
    if name.startswith("scripted:"):
        path = Path(name.removeprefix("scripted:"))
        if not path.is_file():
            raise ValueError(f"no script at {path}; give --model scripted:FILE.json with a file that exists.")
        return ScriptedModel.from_file(path)
    if not (os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN")):
        raise ValueError(
            "no model to talk to: set ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL for a local server), "
            "or replay a script offline with --model scripted:FILE.json."
        )
    from rover.live import AnthropicModel  # imported only here: the SDK takes a second to load

    return AnthropicModel(name)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m rover", description="Run Rover, a small coding agent.")
    parser.add_argument("task", help="what Rover should do, in plain words")
    parser.add_argument("--cwd", default=str(WORKSPACE / "stash"), help="the repo to work on (default: stash/)")
    parser.add_argument("--model", help=f"model name, or scripted:FILE.json (default: $ROVER_MODEL or {DEFAULT_MODEL})")
    parser.add_argument("--max-turns", type=int, default=30, help="stop after this many model calls (default 30)")
    parser.add_argument("--transcript", help="save the whole conversation as JSON to this file")
    parser.add_argument("--quiet", action="store_true", help="print only the final answer")
    return parser


if __name__ == "__main__":
    sys.exit(main())
