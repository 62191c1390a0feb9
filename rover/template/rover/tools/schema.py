"""Check a tool call's arguments against its input schema before the tool sees them.

Models send missing fields, strings for numbers and names the tool never had. Catching that
here means each tool can trust its arguments, and the model gets one message listing every
problem instead of a Python traceback.
"""
from __future__ import annotations

from typing import Any

_TYPES = {
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
    "array": list,
    "object": dict,
}


def problems(value: Any, schema: dict, where: str = "") -> list[str]:
    """Every way `value` breaks `schema`, each naming where; empty when it fits."""
    expected = schema.get("type")
    if expected and not _is_type(value, expected):
        return [f"{where or 'the input'} should be {expected}, got {type(value).__name__} {value!r:.60}"]
    found: list[str] = []
    if expected == "object":
        properties = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                found.append(f"missing required {_join(where, name)}")
        for name, item in value.items():
            if name in properties:
                found += problems(item, properties[name], _join(where, name))
            elif schema.get("additionalProperties") is False:
                found.append(f"unknown argument {_join(where, name)} (allowed: {', '.join(properties)})")
    if expected == "array":
        if len(value) < schema.get("minItems", 0):
            found.append(f"{where} needs at least {schema['minItems']} item(s)")
        for index, item in enumerate(value):
            found += problems(item, schema.get("items", {}), f"{where}[{index}]")
    if "minimum" in schema and _is_type(value, "number") and value < schema["minimum"]:
        found.append(f"{where} must be at least {schema['minimum']}, got {value}")
    return found


def _is_type(value: Any, expected: str) -> bool:
    if isinstance(value, bool) and expected in ("integer", "number"):
        return False
    return isinstance(value, _TYPES[expected])


def _join(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name
