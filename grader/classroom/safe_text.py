"""Text from students made safe for where the instructor opens it: a terminal, or a spreadsheet.

Two helpers, shared by every place the kit prints a name or writes a CSV (the board, `class students`,
`class grade`): `for_terminal` drops what a terminal would act on, `csv_cell` stops a spreadsheet
from running a cell as a formula.
"""
from __future__ import annotations

import unicodedata

# Controls (C0, DEL, C1: escape sequences start here), format characters (bidi overrides that reorder what
# is shown), and line/paragraph separators: none belongs in a name, all can disguise or rewrite a line.
_UNSAFE_CATEGORIES = {"Cc", "Cf", "Zl", "Zp"}
# A spreadsheet treats a cell starting with one of these as a formula (OWASP's list, with full-width forms).
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n", "＝", "＋", "－", "＠")


def for_terminal(text: object) -> str:
    """`text` with every control and format character removed: safe to print on a terminal as it is."""
    return "".join(char for char in str(text) if unicodedata.category(char) not in _UNSAFE_CATEGORIES)


def csv_cell(value: object) -> object:
    """A value for csv.writer that a spreadsheet shows as text: formula-like strings get a leading apostrophe.

    Numbers pass through unchanged (a negative score is a number, not a formula)."""
    if not isinstance(value, str):
        return value
    if value.lstrip(" ")[:1] in _FORMULA_STARTS or value[:1] in _FORMULA_STARTS:
        return "'" + value
    return value


def csv_row(values: list[object]) -> list[object]:
    return [csv_cell(value) for value in values]
