"""The permission gate: PLACEHOLDER for lesson 6 (being written by lessons56)."""
from __future__ import annotations


def decide(command: str, rules: dict) -> tuple[str, str | None]:
    for verdict in ("deny", "ask", "allow"):
        for rule in rules.get(verdict, []):
            if command.startswith(rule):
                return verdict, rule
    return "ask", None
