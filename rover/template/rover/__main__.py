"""`python -m rover "task"`: run Rover on the target repo and watch it work."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from rover.agent import Agent, TurnLimitReached
from rover.display import Display, Silent, Transcript
from rover.model import Model, OffScript, Recorder, ScriptedModel, ScriptError
from rover.prompt import system_prompt
from rover.recording import Recording
from rover.tools import TOOLS

DEFAULT_MODEL = "claude-sonnet-5-5"
WORKSPACE = Path(__file__).resolve().parent.parent


class Unusable(Exception):
    """The command line asks for something that cannot run; the message says what would."""


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    display = Silent() if args.quiet else Transcript(show_tokens=not (args.quiet_tokens or args.transcript))  # recording: a bar instead
    try:
        cwd = _directory(args.cwd)
        for option, path in (("--transcript", args.transcript), ("--record", args.record)):
            _writable(option, path)  # now, not after the run, when the file would be lost
        model = _model(args.model or os.environ.get("ROVER_MODEL") or DEFAULT_MODEL, display, args.max_tokens)
    except Unusable as problem:
        print(f"rover: {problem}", file=sys.stderr)
        return 2
    if args.record:
        model = Recorder(model, args.record)
    model_name = args.model or os.environ.get("ROVER_MODEL") or DEFAULT_MODEL
    recording = Recording(args.transcript, cwd, model_name, args.task) if args.transcript else None
    if recording:
        model, display = recording.watch(model, display, bar=not args.quiet_tokens)
    # A replay expects stash as `workshop start` made it; whether it still is must be asked before the run changes it.
    stale = isinstance(model, ScriptedModel) and cwd == WORKSPACE / "stash" and _stash_changed()
    agent = Agent(model, cwd, system=system_prompt(list(TOOLS)), max_turns=args.max_turns, display=display)
    try:
        answer = agent.run(args.task)
        if args.quiet:
            print(answer)
        else:
            display.summary()
        return 0
    except OffScript as stop:
        print(f"rover: {_off_script(stop, stale)}", file=sys.stderr)
        return 1
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
        if recording:
            recording.save(agent.messages)


def _directory(path: str) -> Path:
    cwd = Path(path).resolve()
    if not cwd.is_dir():
        raise Unusable(f"--cwd {path} is not a directory; point it at the repo Rover should work on.")
    return cwd


def _writable(option: str, path: str | None) -> None:
    if path and not Path(path).resolve().parent.is_dir():
        raise Unusable(f"{option} {path}: the folder {Path(path).parent} does not exist; make it first, or save elsewhere.")


def _off_script(stop: OffScript, stale: bool) -> str:
    """Why a replay left its script, in one line: most often stash is no longer as the script found it."""
    if stale:
        return (f"turn {stop.turn} expected {stop.expected!r} and did not see it: "
                "stash has changed: `workshop reset stash`, or use `workshop demo`")
    first = next((line.strip() for line in stop.seen.splitlines() if line.strip()), "")
    asked = _unanswered()
    if asked:
        return (f"turn {stop.turn} expected {stop.expected!r}, but the gate asked \"{asked}\" with no terminal to answer, "
                "so the command was refused: run it in a terminal and answer, or set ROVER_ANSWERS=y")
    return (f"turn {stop.turn} expected the tool results to contain {stop.expected!r}, but they began {first[:100]!r}: "
            "your tools answer differently from the run the script recorded")


def _unanswered() -> str:
    """The last question of the gate (lesson 6 on) that nobody was there to answer, if any."""
    try:
        from rover import person
    except ImportError:
        return ""
    return next(reversed(getattr(person, "unanswered", [])), "")


def _stash_changed() -> bool:
    """Whether stash/ differs from the workspace's first commit, uncommitted and new files included."""
    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", *args], cwd=WORKSPACE, capture_output=True, text=True)

    try:
        first = git("rev-list", "--max-parents=0", "HEAD").stdout.split()
        if not first:
            return False
        return git("diff", "--quiet", first[-1], "--", "stash").returncode == 1 or bool(
            git("ls-files", "--others", "--exclude-standard", "--", "stash").stdout.strip())
    except OSError:  # no git: say nothing rather than guess
        return False


def _model(name: str, display: Display, max_tokens: int | None = None) -> Model:
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

    return AnthropicModel(name, on_retry=display.notice, **({"max_tokens": max_tokens} if max_tokens else {}))


def _use_class_relay() -> bool:
    """After `workshop join`, the class token stands in for an API key: also when the class had no relay at the join
    and was served again with one (a board without a relay refuses, saying so)."""
    try:
        joined = json.loads((WORKSPACE / ".git" / "workshop-class.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not (isinstance(joined, dict) and joined.get("token") and joined.get("url")):
        return False
    os.environ["ANTHROPIC_BASE_URL"], os.environ["ANTHROPIC_API_KEY"] = joined["url"], joined["token"]
    return True


def _api_failure(failure: Exception) -> str | None:
    if "rover.live" not in sys.modules:
        return None
    from rover.live import describe_failure

    return describe_failure(failure)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        """A usage error in one line, as every other refusal here is."""
        self.exit(2, f"rover: {message}; `python -m rover --help` lists the options\n")


def _turns(text: str) -> int:
    if not text.lstrip("+").isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"should be a whole number of model calls, 1 or more, not {text!r}")
    return int(text)


def _tokens(text: str) -> int:
    if not text.lstrip("+").isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"should be a whole number of tokens, 1 or more, not {text!r}")
    return int(text)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m rover", description="Run Rover, a small coding agent.")
    parser.add_argument("task", help="what Rover should do, in plain words")
    parser.add_argument("--cwd", default=str(WORKSPACE / "stash"), help="the repo to work on (default: stash/ in this workspace)")
    parser.add_argument("--model", help=f"a model name, or scripted:FILE.json to replay a script (default: $ROVER_MODEL or {DEFAULT_MODEL})")
    parser.add_argument("--max-turns", type=_turns, default=30, help="stop after this many model calls (default 30)")
    parser.add_argument("--max-tokens", type=_tokens, metavar="N", help="the most tokens one reply may use (default 8192)")
    parser.add_argument("--transcript", metavar="FILE", help="save every request, reply, tool call and diff as JSON, even when interrupted; "
                        "`workshop transcript FILE` draws it")
    parser.add_argument("--record", metavar="FILE", help="save the model's replies as a script that replays offline")
    parser.add_argument("--quiet", action="store_true", help="print only the final answer")
    parser.add_argument("--quiet-tokens", action="store_true", help="no token line (or context bar) after each reply; one summary at the end")
    return parser


if __name__ == "__main__":
    sys.exit(main())
