"""What a person watches while Rover works: one line per tool call, diffs, output tails, tokens.

The loop reports two events, `reply` and `tool`; everything about how they look lives here,
so the loop stays free of printing.
"""
from __future__ import annotations

import re
from typing import Protocol

from rover.model import Reply
from rover.tools.result import ToolResult

# Dollars per million tokens (Sonnet-class list prices), for a rough running cost.
PRICES = {"input_tokens": 3.00, "output_tokens": 15.00, "cache_read_input_tokens": 0.30, "cache_creation_input_tokens": 3.75}
DIFF_LINES = 40  # an edit's diff is shown whole up to this many lines (context included), then cut
# The context bar's look per kind of block: a shade that reads without colour too, and a colour.
BAR_LOOK = {"prompt+tools": ("░", "grey50"), "task": ("▒", "yellow"), "model": ("▓", "magenta"), "tool results": ("█", "cyan")}


class Display(Protocol):
    def reply(self, reply: Reply) -> None: ...
    def tool(self, call: dict, result: ToolResult) -> None: ...
    def notice(self, text: str) -> None: ...
    def summary(self) -> None: ...


class Silent:
    """For tests and the grader: sees everything, shows nothing."""

    def reply(self, reply: Reply) -> None:
        pass

    def tool(self, call: dict, result: ToolResult) -> None:
        pass

    def notice(self, text: str) -> None:
        pass

    def summary(self) -> None:
        pass


class Transcript:
    """The live transcript, drawn with rich. `show_tokens=False` keeps the token count to one line at the end."""

    def __init__(self, console=None, show_tokens: bool = True):
        from rich.console import Console

        self.console = console or Console(highlight=False)
        self.show_tokens = show_tokens
        self.totals = dict.fromkeys(PRICES, 0)
        self.turns = 0

    def reply(self, reply: Reply) -> None:
        for block in reply.content:
            if block.get("type") == "text" and block.get("text", "").strip():
                self.console.print(block["text"].strip(), markup=False)
        if reply.stop_reason == "max_tokens":
            self.console.print("[yellow]! the reply hit max_tokens and was cut off[/]")
        if reply.usage:
            self._tokens(reply.usage)

    def tool(self, call: dict, result: ToolResult) -> None:
        args = call.get("input") or {}
        mark = "[red]✗[/]" if result.is_error else "[cyan]•[/]"
        self.console.print(f"{mark} {_escape(_headline(call.get('name', '?'), args, result))}")
        if result.text.startswith("↺ repaired:"):  # lesson 7's notes: what the registry mended in the call
            self.console.print(f"[yellow]  {_escape(result.text.splitlines()[0])}[/]")
        lines = [line for line in result.text.splitlines() if line.strip() and not line.startswith("↺ repaired:")]  # shown once, above
        if call.get("name") == "bash":
            self._dim(lines[-6:])
        elif result.is_error:
            self._dim(lines[-2:])
        elif call.get("name") == "edit":
            self._diff(result.text)

    def notice(self, text: str) -> None:
        self.console.print(f"[yellow]↻ {_escape(text)}[/]")

    def summary(self) -> None:
        """The whole run's tokens in one line, when the per-reply lines were left out."""
        if self.turns and not self.show_tokens:
            self.console.print(f"[dim]tokens over {self.turns} replies: {self._total()}[/]")

    def context_bar(self, size: int, shares: dict[str, float], billed: int) -> None:
        """One line under a reply: how big the request was, what it was made of, and what all requests cost so far.
        Drawn when the run records a transcript (`--transcript`), in place of the token line."""
        kind = max(shares, key=shares.get)
        tail = f" {kind} {shares[kind]:.0%} · billed {_k(billed)}"
        head = f"  context {_k(size)} "
        width = max(5, min(self.console.width, 80) - len(head) - len(tail) - 3)
        cells = _cells(shares, width)
        bar = "".join(f"[{BAR_LOOK[name][1]}]{BAR_LOOK[name][0] * count}[/]" for name, count in cells.items() if count)
        self.console.print(f"[dim]{head}[/]▕{bar}▏[dim]{_escape(tail)}[/]", no_wrap=True, overflow="ellipsis")

    def _tokens(self, usage: dict) -> None:
        self.turns += 1
        for key in self.totals:
            self.totals[key] += usage.get(key) or 0
        if self.show_tokens:
            turn = f"in {usage.get('input_tokens', 0):,} · out {usage.get('output_tokens', 0):,} · cached {usage.get('cache_read_input_tokens') or 0:,}"
            self.console.print(f"[dim]  tokens: {turn}   total {self._total()}[/]")

    def _total(self) -> str:
        cost = sum(self.totals[key] * price for key, price in PRICES.items()) / 1_000_000
        total = self.totals["input_tokens"] + self.totals["output_tokens"] + self.totals["cache_read_input_tokens"]
        return f"{total:,} ≈ ${cost:.4f}"

    def _dim(self, lines: list[str]) -> None:
        width = self.console.width - 2
        for line in lines:
            self.console.print(f"[dim]  {_escape(_fit_rule(line, width))}[/]", no_wrap=True, overflow="ellipsis")

    def _diff(self, text: str) -> None:
        """The edit's own diff: its context lines too, since they show where the change sits."""
        lines = [line for line in text.splitlines() if not line.startswith(("+++", "---"))]
        for line in lines[:DIFF_LINES]:
            style = {"+": "green", "-": "red", "@": "cyan", " ": "dim"}.get(line[:1])
            if style:
                self.console.print(f"  [{style}]{_escape(line)}[/]", no_wrap=True, overflow="ellipsis")
        if len(lines) > DIFF_LINES:
            self.console.print(f"[dim]  … {len(lines) - DIFF_LINES} more diff lines[/]")


def _headline(name: str, args: dict, result: ToolResult) -> str:
    path = args.get("path") or args.get("filePath") or args.get("file_path") or "."  # as sent, before repair
    if name == "read" and not result.is_error:
        shown = sum(1 for line in result.text.splitlines() if line[:6].strip().isdigit() and line[6:7] == "\t")
        return f"Read {path} ({shown} lines)"
    if name == "bash":
        return f"Bash: {args.get('command', '')}"
    if name == "write" and not result.is_error:
        answer = next((line.strip() for line in result.text.splitlines() if line.strip()), "")
        if not answer:
            return f"Write {path}"
        return f"Write: {answer}" if path in answer else f"Write {path}: {answer}"  # the tool's own words, whatever it counts
    if name == "search":
        return f"Search {args.get('pattern', '')!r} in {path}"
    label = {"ls": "List", "read": "Read", "edit": "Edit", "write": "Write"}.get(name, name)
    return f"{label} {path}"


def _k(tokens: int) -> str:
    return f"{tokens / 1000:.1f}k" if tokens >= 1000 else str(tokens)


def _cells(shares: dict[str, float], width: int) -> dict[str, int]:
    """`width` cells shared out by largest remainder, so they always fill the bar exactly."""
    exact = {name: share * width for name, share in shares.items()}
    cells = {name: int(value) for name, value in exact.items()}
    for name in sorted(exact, key=lambda name: exact[name] - cells[name], reverse=True)[:width - sum(cells.values())]:
        cells[name] += 1
    return cells


def _fit_rule(line: str, width: int) -> str:
    """A rule line such as pytest's `==== 2 failed in 0.1s ====` shortened to fit, rather than cut off with '…'."""
    rule = re.fullmatch(r"([=_*-])\1{3,}(.*?)\1{3,}", line)
    if rule is None or len(line) <= width:
        return line
    middle = rule[2]
    side = max(3, (width - len(middle)) // 2)
    return rule[1] * side + middle + rule[1] * side


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)
