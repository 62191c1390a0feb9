"""Argument repair: mend what models commonly get wrong in a tool call, and say what was mended.

Models learn tool names from many agents, so they send `file_path` where ours says `path`,
`old_string` where ours says `oldText`, a list as a JSON string, one edit where a list belongs,
`"10"` for 10. Each of these has exactly one sensible reading, so the repair is mechanical and
the model is told about it. Anything with two readings (`path` and `filePath` both given, and
different) is refused, never guessed. What is still wrong afterwards is the validator's to report.
"""
from __future__ import annotations

import json
import re
from typing import Any

from rover.tools.result import ToolError

# The name each argument has here, and the names other tools taught the model to use for it.
ALIASES = {
    "path": ("filePath", "file_path"),
    "oldText": ("old_string", "oldString", "old_str"),
    "newText": ("new_string", "newString", "new_str"),
}
EDIT = {"oldText": {}, "newText": {}}  # the properties of one edit, as _rename reads them
LOOSE = ("oldText", "newText", *ALIASES["oldText"], *ALIASES["newText"])  # edit fields sent beside path
INTEGER = re.compile(r"\s*[+-]?\d+\s*")
NUMBER = re.compile(r"\s*[+-]?(\d+\.?\d*|\.\d+)\s*")


def prepare_arguments(name: str, args: Any) -> tuple[Any, list[str]]:
    """`args` with the common mistakes mended, and one note per repair ("filePath → path").

    The input is never changed in place. Raises ToolError when two names for one argument
    carry different values: which one the model meant is a guess, and we do not guess.
    """
    from rover.tools import TOOLS  # the registry imports this module, so look tools up only when called

    tool = TOOLS.get(name)
    if tool is None or not isinstance(args, dict):
        return args, []
    properties = tool.INPUT_SCHEMA.get("properties", {})
    notes: list[str] = []
    args = _rename(args, properties, notes)
    if "edits" in properties:
        args = _repair_edits(args, notes)
    return _convert_scalars(args, properties, notes), notes


def _rename(args: dict, properties: dict, notes: list[str], where: str = "") -> dict:
    """Other tools' names for an argument, renamed to ours; a clash of two different values is refused."""
    fixed = dict(args)
    for ours, theirs in ALIASES.items():
        if ours not in properties:
            continue
        for alias in theirs:
            if alias not in fixed or alias in properties:
                continue
            value = fixed.pop(alias)
            if ours in fixed and fixed[ours] != value:
                raise ToolError(f"Conflicting arguments: {where}{ours}={fixed[ours]!r:.80} and {where}{alias}={value!r:.80} "
                                f"differ, and guessing which one you meant could change the wrong thing. Send only {ours}.")
            notes.append(f"{where}{alias} → {ours}" + (" (same value given twice)" if ours in fixed else ""))
            fixed[ours] = value
    return fixed


def _repair_edits(args: dict, notes: list[str]) -> dict:
    """edits as a JSON string or a single object becomes a list; a top-level oldText/newText joins it."""
    fixed = dict(args)
    edits = fixed.get("edits")
    if isinstance(edits, str):
        parsed = _parse_json(edits)
        if isinstance(parsed, (list, dict)):
            notes.append("edits: parsed from a JSON string")
            edits = parsed
    if isinstance(edits, dict):
        notes.append("edits: one edit wrapped in a list")
        edits = [edits]
    if isinstance(edits, list):
        edits = [_rename(edit, EDIT, notes, f"edits[{index}].") if isinstance(edit, dict) else edit
                 for index, edit in enumerate(edits)]
    loose = _rename({key: fixed.pop(key) for key in LOOSE if key in fixed}, EDIT, notes)
    if loose and (isinstance(edits, list) or "edits" not in fixed):
        edits = edits if isinstance(edits, list) else []
        if loose in edits:
            notes.append("oldText/newText: dropped, the same edit is already in edits")
        else:
            notes.append(f"oldText/newText → edits[{len(edits)}]")
            edits = [*edits, loose]
    elif loose:
        fixed.update(loose)  # edits is something else again: folding into it would be a guess
    if isinstance(edits, list) or "edits" in fixed:
        fixed["edits"] = edits
    return fixed


def _convert_scalars(args: dict, properties: dict, notes: list[str]) -> dict:
    """A number or a true/false sent as a string, where the schema wants the number or the boolean."""
    fixed = dict(args)
    for key, value in args.items():
        wanted = properties.get(key, {}).get("type")
        if not isinstance(value, str):
            continue
        if wanted == "integer" and INTEGER.fullmatch(value):
            fixed[key] = int(value)
        elif wanted == "number" and NUMBER.fullmatch(value):
            fixed[key] = float(value) if "." in value else int(value)
        elif wanted == "boolean" and value.strip().lower() in ("true", "false"):
            fixed[key] = value.strip().lower() == "true"
        else:
            continue
        notes.append(f"{key}: {value!r} → {fixed[key]!r}")
    return fixed


def _parse_json(text: str) -> Any:
    """JSON as models write it: raw newlines inside strings (strict=False) and trailing commas allowed."""
    for candidate in (text, _drop_trailing_commas(text)):
        try:
            return json.loads(candidate, strict=False)
        except ValueError:
            continue
    return None


def _drop_trailing_commas(text: str) -> str:
    """Remove a comma that only precedes `]` or `}`, outside strings, so text inside oldText is never touched."""
    kept, in_string, escaped = [], False, False
    for index, char in enumerate(text):
        if in_string:
            in_string = not (char == '"' and not escaped)
            escaped = char == "\\" and not escaped
        elif char == '"':
            in_string = True
        elif char == "," and text[index + 1:].lstrip()[:1] in ("]", "}"):
            continue
        kept.append(char)
    return "".join(kept)
