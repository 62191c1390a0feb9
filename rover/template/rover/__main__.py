"""`python -m rover "task"`: run Rover on the target repo and watch it work."""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from rover.agent import Agent, TurnLimitReached
from rover.display import Display, Silent, Transcript
from rover.model import Model, Recorder, ScriptedModel, ScriptError
from rover.prompt import system_prompt
from rover.tools import TOOLS

DEFAULT_MODEL = "claude-sonnet-5-5"
WORKSPACE = Path(__file__).resolve().parent.parent


class Unusable(Exception):
    """The command line asks for something that cannot run; the message says what would."""


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    display = Silent() if args.quiet else Transcript()
    try:
        cwd = _directory(args.cwd)
        model = _model(args.model or os.environ.get("ROVER_MODEL") or DEFAULT_MODEL, display)
    except Unusable as problem:
        print(f"rover: {problem}", file=sys.stderr)
        return 2
    if args.record:
        model = Recorder(model, args.record)
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
        print("rover: interrupted" + (f"; the conversation so far is in {args.transcript}" if args.transcript else ""), file=sys.stderr)
        return 130
    except Exception as failure:
        reason = _api_failure(failure)
        if reason is None:
            raise  # a bug in Rover itself: the traceback is the most useful thing to show
        print(f"rover: {reason}", file=sys.stderr)
        return 1
    finally:
        if args.transcript:
            Path(args.transcript).write_text(json.dumps(agent.messages, indent=2), encoding="utf-8")


def _directory(path: str) -> Path:
    cwd = Path(path).resolve()
    if not cwd.is_dir():
        raise Unusable(f"--cwd {path} is not a directory; point it at the repo Rover should work on.")
    return cwd


def _model(name: str, display: Display) -> Model:
    if name.startswith("scripted:"):
        path = Path(name.removeprefix("scripted:"))
        if not path.is_file():
            raise Unusable(f"no script at {path}; give --model scripted:FILE.json with a file that exists.")
        try:
            return ScriptedModel.from_file(path)
        except (ValueError, KeyError) as problem:
            raise Unusable(f"{path} is not a script ({problem}); it should be JSON like {{\"turns\": [...]}}.") from None
    if not (os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN") or _use_class_relay()):
        raise Unusable(
            "no model to talk to: set ANTHROPIC_API_KEY (with ANTHROPIC_BASE_URL for a compatible or local server), "
            "or replay a script offline with --model scripted:FILE.json."
        )
    from rover.live import AnthropicModel  # the SDK takes a second to load: only live runs pay for it

    return AnthropicModel(name, on_retry=display.notice)


def _use_class_relay() -> bool:
    """After `workshop join` to a class with a relay, the class token stands in for an API key."""
    try:
        joined = json.loads((WORKSPACE / ".git" / "workshop-class.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not (isinstance(joined, dict) and joined.get("relay") and joined.get("token") and joined.get("url")):
        return False
    os.environ["ANTHROPIC_BASE_URL"], os.environ["ANTHROPIC_API_KEY"] = joined["url"], joined["token"]
    return True


def _api_failure(failure: Exception) -> str | None:
    if "rover.live" not in sys.modules:
        return None
    from rover.live import describe_failure

    return describe_failure(failure)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m rover", description="Run Rover, a small coding agent.")
    parser.add_argument("task", help="what Rover should do, in plain words")
    parser.add_argument("--cwd", default=str(WORKSPACE / "stash"), help="the repo to work on (default: stash/ in this workspace)")
    parser.add_argument("--model", help=f"a model name, or scripted:FILE.json to replay a script (default: $ROVER_MODEL or {DEFAULT_MODEL})")
    parser.add_argument("--max-turns", type=int, default=30, help="stop after this many model calls (default 30)")
    parser.add_argument("--transcript", metavar="FILE", help="save the whole conversation as JSON, even when interrupted")
    parser.add_argument("--record", metavar="FILE", help="save the model's replies as a script that replays offline")
    parser.add_argument("--quiet", action="store_true", help="print only the final answer")
    return parser


if __name__ == "__main__":
    sys.exit(main())
