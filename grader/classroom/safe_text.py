"""Door 5, text out: every string a student or their code can influence passes `clean` before it is written.

A name (a folder, a zip, a git author), a path or a message (an exception's, a check's) may hold bytes that are not
UTF-8 (a folder named in Latin-1 arrives as lone surrogates), lone surrogates of its own (a JSON escape), escape
sequences a terminal would act on, bidi overrides that reorder a line, or a megabyte of text. `clean` makes it
valid UTF-8 with no control or format character, bounded; the writers (CSV, HTML, JSON, Gradescope, the terminal)
call it, so one row can never stop a report from being written. `csv_cell` also stops a spreadsheet from running a
cell as a formula.
"""
from __future__ import annotations

import unicodedata

NAME_LIMIT = 200  # characters of a name, a source or a path
MESSAGE_LIMIT = 4000  # characters of a message (a check keeps 2,000 of its own)
REPLACEMENT = "\ufffd"
# Controls (C0, DEL, C1: escape sequences start here), format characters (bidi overrides that reorder what
# is shown), line/paragraph separators and surrogates: none belongs in a name, all can disguise or rewrite a line.
_UNSAFE_CATEGORIES = {"Cc", "Cf", "Zl", "Zp"}
# A spreadsheet treats a cell starting with one of these as a formula (OWASP's list, with full-width forms).
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n", "＝", "＋", "－", "＠")


def clean(text: object, limit: int = NAME_LIMIT, lines: bool = False) -> str:
    """`text` as valid UTF-8 without control, format or surrogate characters, at most `limit` characters.

    Bytes are decoded as UTF-8 (a byte that is not becomes U+FFFD), and so is every lone surrogate (a byte that
    os.fsdecode could not decode, or a JSON escape). With `lines`, newlines stay (a message's lines) and a tab is a
    space; without, both are a space. A cut text ends in "…"."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", "replace")
    kept = []
    for char in str(text):
        if "\ud800" <= char <= "\udfff":
            kept.append(REPLACEMENT)
        elif char == "\n":
            kept.append("\n" if lines else " ")
        elif char == "\t":
            kept.append(" ")
        elif unicodedata.category(char) not in _UNSAFE_CATEGORIES:
            kept.append(char)
        if len(kept) > limit:
            return "".join(kept[:limit - 1]) + "…"
    return "".join(kept)


def clean_message(text: object) -> str:
    """A message (an exception's, a check's): its lines kept, bounded at MESSAGE_LIMIT."""
    return clean(text, MESSAGE_LIMIT, lines=True)


def clean_tree(value: object, limit: int = MESSAGE_LIMIT) -> object:
    """Every string in a JSON-like tree (dict keys too) cleaned as a message of at most `limit` characters: a
    report's data, ready to write."""
    if isinstance(value, str):
        return clean(value, limit, lines=True)
    if isinstance(value, dict):
        return {clean(key, limit, lines=True) if isinstance(key, str) else key: clean_tree(item, limit) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean_tree(item, limit) for item in value]
    return value


def for_terminal(text: object) -> str:
    """`text` cleaned for a terminal line: nothing it would act on, bounded."""
    return clean(text, MESSAGE_LIMIT)


def csv_cell(value: object) -> object:
    """A value for csv.writer: cleaned, and shown as text by a spreadsheet (formula-like strings get a leading
    apostrophe). Numbers pass through unchanged (a negative score is a number, not a formula)."""
    if not isinstance(value, str):
        return value
    formula = value.lstrip(" ")[:1] in _FORMULA_STARTS or value[:1] in _FORMULA_STARTS
    value = clean_message(value)
    return "'" + value if formula or value.lstrip(" ")[:1] in _FORMULA_STARTS else value


def csv_row(values: list[object]) -> list[object]:
    return [csv_cell(value) for value in values]
