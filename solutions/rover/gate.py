"""gate: decide which bash commands Rover may run, and keep the file tools inside the working directory.

A model that may run any command will, one day, run the wrong one: `rm -rf` on the wrong folder,
a `git push` nobody asked for. The gate puts rules between the model and the shell. It cuts a
command line into the commands it would really run (across &&, ||, ;, |, newlines, $(...),
backticks and subshells) and judges each: deny beats ask, ask beats allow, and what no rule
allows is asked. The rules live in rover/permissions.toml, outside the repo Rover works on, so
the model cannot rewrite them with its own tools.
"""
from __future__ import annotations

import fnmatch
import json
import re
import shlex
import sys
from pathlib import Path

from rover import person
from rover.tools.files import write_atomic
from rover.tools.result import ToolError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

RULES_FILE = Path(__file__).with_name("permissions.toml")
STRICTNESS = {"allow": 0, "ask": 1, "deny": 2}
SEPARATORS = set(";&|()\n")  # a token made only of these ends one command and starts the next
COMPUTED = "$"  # what a $(...) or `...` leaves in the command line: a word that could be anything
# Words that run the words after them as the command: judge that command, not them.
WRAPPERS = {"env", "command", "builtin", "exec", "nohup", "nice", "time", "xargs", "sudo",
            "{", "}", "!", "if", "then", "elif", "else", "while", "until", "do"}
# A wrapper's options that take a value, peeled with it: `nice -n 10`, `env -u HOME`, `sudo -u root`.
VALUED = {"env": {"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}, "nice": {"-n", "--adjustment"},
          "exec": {"-a"}, "sudo": {"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"},
          "xargs": {"-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s"}}
SHELLS = {"bash", "sh", "zsh", "dash"}
PUNCTUATION = set(";&|()<>\n")
# bash's operators, longest first: shlex glues neighbouring ones into one token (`;(`, `&>`, two newlines)
OPERATORS = sorted(["&&", "||", "|&", "&>>", "&>", ">>", ">&", ">|", "<<<", "<<", "<&", "<>", ">", "<", ";", "&", "|",
                    "(", ")", "\n"], key=len, reverse=True)
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def decide(command: str, rules: dict) -> tuple[str, str | None]:
    """('allow' | 'ask' | 'deny', the rule that decided, or None) for a whole command line."""
    try:
        inner, outer = _substitutions(command)
        tokens = _tokens(outer)
    except ValueError:  # an open quote or bracket: what cannot be read cannot be allowed
        return "ask", None
    parts = _parts(tokens)
    if not parts:
        return "ask", None
    verdicts = [_judge(part, rules) for part in parts] + [decide(piece, rules) for piece in inner]
    whole = _restrict([" ".join(tokens)], rules)  # a deny or ask rule may name a pipeline: curl * | sh
    return max(verdicts + [whole] * bool(whole), key=lambda verdict: STRICTNESS[verdict[0]])  # the first of the strictest


def _judge(words: list[str], rules: dict) -> tuple[str, str | None]:
    """The verdict on one simple command: restrictive rules see through wrappers, allow rules do not."""
    written, runs = " ".join(words), _command(words)
    found = _restrict([written, " ".join(runs)], rules)
    if found:
        return found
    if runs and runs[0] in SHELLS and "-c" in runs[1:-1]:
        return decide(runs[runs.index("-c", 1) + 1], rules)  # bash -c 'STRING': STRING is the command
    if runs and runs[0] == "eval":
        return decide(" ".join(runs[1:]), rules)
    if not runs or "$" in runs[0] or any(">" in word and set(word) <= set("<>&|") for word in words):
        return "ask", None  # a computed command name could be anything; a redirection writes a file
    for rule in rules.get("allow", []):
        if _matches(rule, written):
            return "allow", rule
    return "ask", None


def _restrict(texts: list[str], rules: dict) -> tuple[str, str] | None:
    for kind in ("deny", "ask"):
        for rule in rules.get(kind, []):
            if any(_matches(rule, text) for text in texts):
                return kind, rule
    return None


def _matches(rule: str, text: str) -> bool:
    """A glob (* ? [) matches the whole text; anything else is a prefix that ends at a word."""
    rule = " ".join(rule.split())
    if any(char in rule for char in "*?["):
        return fnmatch.fnmatchcase(text, rule)
    return text == rule or text.startswith(rule + " ")


def _substitutions(command: str) -> tuple[list[str], str]:
    """Cut every $(...) and `...` out: (what they would run, the command with COMPUTED in their place)."""
    inner, outer, at = [], [], 0
    while at < len(command):
        if command.startswith("$(", at):
            depth, end = 1, at + 2
            while end < len(command) and depth:
                depth += {"(": 1, ")": -1}.get(command[end], 0)
                end += 1
            if depth:
                raise ValueError("unclosed $(")
            inner.append(command[at + 2:end - 1])
            outer.append(COMPUTED)
            at = end
        elif command[at] == "`":
            end = command.find("`", at + 1)
            if end < 0:
                raise ValueError("unclosed backtick")
            inner.append(command[at + 1:end])
            outer.append(COMPUTED)
            at = end + 1
        else:
            outer.append(command[at])
            at += 1
    return inner, "".join(outer)


def _tokens(command: str) -> list[str]:
    """Words as the shell sees them (quotes and backslashes removed), operators as tokens of their own."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()<>\n")
    lexer.whitespace, lexer.whitespace_split, lexer.commenters = " \t\r", True, ""
    return list(lexer)


def _parts(tokens: list[str]) -> list[list[str]]:
    """Simple commands: a glued token is split into its operators; separators end a part, redirections stay in it."""
    parts, current = [], []
    for token in tokens:
        for piece in _operators(token) if set(token) <= PUNCTUATION else [token]:
            if set(piece) <= SEPARATORS:
                parts, current = parts + [current] * bool(current), []
            else:
                current.append(piece)
    return parts + [current] * bool(current)


def _operators(token: str) -> list[str]:
    """`;(` is `;` and `(`; `&>` stays one redirection."""
    pieces = []
    while token:
        piece = next(operator for operator in OPERATORS if token.startswith(operator))
        pieces.append(piece)
        token = token[len(piece):]
    return pieces


def _command(words: list[str]) -> list[str]:
    """The words of the command a part really runs: past VAR=value, keywords and wrappers (and their
    options), with the program named without its folder (/bin/rm is rm)."""
    runs, wrapper = list(words), None
    while runs and (ASSIGNMENT.match(runs[0]) or runs[0] in WRAPPERS or (wrapper and _option(runs[0]))):
        word = runs.pop(0)
        if word in WRAPPERS:
            wrapper = word
        elif wrapper and word in VALUED.get(wrapper, ()) and runs:
            runs.pop(0)  # the option's value: `-n 10`, `-u HOME`
    return [runs[0].rsplit("/", 1)[-1], *runs[1:]] if runs else runs


def _option(word: str) -> bool:
    """A wrapper's option or its number (`nice -n 5`), never the command itself."""
    return word.startswith("-") or word.isdigit()


def load_rules(path: Path = RULES_FILE) -> dict:
    return tomllib.loads(Path(path).read_text(encoding="utf-8"))


def remember(rule: str, path: Path | str = RULES_FILE) -> None:
    """Add `rule` to the allow list in `path`, keeping every other line (comments too) as it was."""
    text = Path(path).read_text(encoding="utf-8")
    entry = json.dumps(rule)  # a JSON string is a valid TOML string
    opening = re.search(r"^allow\s*=\s*\[", text, re.MULTILINE)
    if opening:
        text = f"{text[:opening.end()]}\n  {entry},{text[opening.end():]}"
    else:
        text = f"{text.rstrip()}\nallow = [{entry}]\n"
    write_atomic(Path(path), text.encode("utf-8"))


def inside(cwd: Path, path: str) -> bool:
    """Whether `path` stays inside `cwd` once '..', absolute paths and symlinks are followed."""
    root = Path(cwd).resolve()
    return (root / path).resolve().is_relative_to(root)


def screen(name: str, args: dict, cwd: Path) -> None:
    """The registry calls this before every tool call: raise ToolError to refuse it."""
    path = args.get("path")
    if isinstance(path, str) and not inside(cwd, path):
        raise ToolError(f"{path} is outside the working directory, and the file tools stay inside it. "
                        "Use a path relative to the working directory, without '..'.")
    if name == "bash":
        _permit(args["command"])


def _permit(command: str) -> None:
    rules = load_rules(RULES_FILE)
    verdict, rule = decide(command, rules)
    if verdict == "deny":
        raise ToolError(f"Denied by the rule {rule!r} in rover/permissions.toml: {command!r} was not run. "
                        "Find another way, or tell the person what you wanted to run and why.")
    if verdict == "allow":
        return
    answer = person.ask(f"Rover wants to run: {command}")
    if answer == "always":
        for part in _unapproved(command, rules):
            remember(part, RULES_FILE)
    elif answer != "y":
        raise ToolError(f"Not run: {command!r} needs the person's approval (no rule allows it), and it was not given. "
                        "Tell the person what you wanted to run and why.")


def _unapproved(command: str, rules: dict) -> list[str]:
    """The simple commands of `command` that no rule allows yet: what 'always' should allow from now on."""
    try:
        parts = [" ".join(part) for part in _parts(_tokens(_substitutions(command)[1]))]
    except ValueError:
        return [command]
    return [part for part in parts if decide(part, rules)[0] != "allow"]
