"""What a person watches while Rover works: one line per tool call, diffs, output tails, tokens.

The loop reports two events, `reply` and `tool`; everything about how they look lives here,
so the loop stays free of printing.
"""
from __future__ import annotations

from typing import Protocol

from rover.model import Reply
from rover.tools.result import ToolResult

# Dollars per million tokens (Sonnet-class list prices), for a rough running cost.
PRICES = {"input_tokens": 3.00, "output_tokens": 15.00, "cache_read_input_tokens": 0.30, "cache_creation_input_tokens": 3.75}


class Display(Protocol):
    def reply(self, reply: Reply) -> None: ...
    def tool(self, call: dict, result: ToolResult) -> None: ...
    def notice(self, text: str) -> None: ...


class Silent:
    """For tests and the grader: sees everything, shows nothing."""

    def reply(self, reply: Reply) -> None:
        pass

    def tool(self, call: dict, result: ToolResult) -> None:
        pass

    def notice(self, text: str) -> None:
        pass


class Transcript:
    """The live transcript, drawn with rich."""

    def __init__(self, console=None, show_tokens: bool = True):
        from rich.console import Console

        self.console = console or Console(highlight=False)
        self.show_tokens = show_tokens
        self.totals = dict.fromkeys(PRICES, 0)

    def reply(self, reply: Reply) -> None:
        for block in reply.content:
            if block.get("type") == "text" and block.get("text", "").strip():
                self.console.print(block["text"].strip(), markup=False)
        if reply.stop_reason == "max_tokens":
            self.console.print("[yellow]! the reply hit max_tokens and was cut off[/]")
        if self.show_tokens and reply.usage:
            self._tokens(reply.usage)

    def tool(self, call: dict, result: ToolResult) -> None:
        args = call.get("input") or {}
        mark = "[red]✗[/]" if result.is_error else "[cyan]•[/]"
        self.console.print(f"{mark} {_escape(_headline(call.get('name', '?'), args, result))}")
        if result.text.startswith("↺ repaired:"):  # lesson 7's notes: what the registry mended in the call
            self.console.print(f"[yellow]  {_escape(result.text.splitlines()[0])}[/]")
        lines = [line for line in result.text.splitlines() if line.strip()]
        if call.get("name") == "bash":
            self._dim(lines[-6:])
        elif result.is_error:
            self._dim(lines[-2:])
        elif call.get("name") == "edit":
            self._diff(result.text)

    def notice(self, text: str) -> None:
        self.console.print(f"[yellow]↻ {_escape(text)}[/]")

    def _tokens(self, usage: dict) -> None:
        for key in self.totals:
            self.totals[key] += usage.get(key) or 0
        cost = sum(self.totals[key] * price for key, price in PRICES.items()) / 1_000_000
        turn = f"in {usage.get('input_tokens', 0):,} · out {usage.get('output_tokens', 0):,} · cached {usage.get('cache_read_input_tokens') or 0:,}"
        total = self.totals["input_tokens"] + self.totals["output_tokens"] + self.totals["cache_read_input_tokens"]
        self.console.print(f"[dim]  tokens: {turn}   total {total:,} ≈ ${cost:.4f}[/]")

    def _dim(self, lines: list[str]) -> None:
        for line in lines:
            self.console.print(f"[dim]  {_escape(line)}[/]", no_wrap=True, overflow="ellipsis")

    def _diff(self, text: str) -> None:
        for line in text.splitlines():
            if line.startswith(("+++", "---")):
                continue
            style = {"+": "green", "-": "red", "@": "cyan"}.get(line[:1])
            if style:
                self.console.print(f"  [{style}]{_escape(line)}[/]")


def _headline(name: str, args: dict, result: ToolResult) -> str:
    path = args.get("path") or args.get("filePath") or args.get("file_path") or "."  # as sent, before repair
    if name == "read" and not result.is_error:
        shown = sum(1 for line in result.text.splitlines() if line[:6].strip().isdigit() and line[6:7] == "\t")
        return f"Read {path} ({shown} lines)"
    if name == "bash":
        return f"Bash: {args.get('command', '')}"
    if name == "write" and not result.is_error:
        return f"Write {path} ({len(args.get('content', '').encode()):,} bytes)"
    label = {"ls": "List", "read": "Read", "edit": "Edit", "write": "Write"}.get(name, name)
    return f"{label} {path}"


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)
