"""The course's proof fixtures: wrong solutions the checks must catch, alternatives they must accept.

Both live in tests/fixtures/ as `[[lesson-N]]` tables: `name`, then either `replace` (old, new
pairs applied to the reference solution; each old must occur) or `content` (the whole file),
for the lesson's file or for `file` when given; a wrong solution also names the checks that
must fail on it in `catches`, and may name in `says` words each of those checks' failure messages
must hold (the cause, where a plausible message would name another). A case may start from an alternative instead of the reference
(`base = "<its name>"`: a student's valid solution, then the mistake or the variant as `replace`
pairs on it); an alternative's base is listed before it.
The kit's tests and `workshop dev check` both apply them here.
"""
from __future__ import annotations

import functools
import sys
from dataclasses import dataclass
from pathlib import Path

from grader.course import kit

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

WRONG = "wrong_solutions"
ALTERNATIVES = "alternatives"


class FixtureOutOfDate(ValueError):
    """A `replace` pair whose old text is no longer in the file it changes."""


@dataclass(frozen=True)
class Case:
    lesson: int
    name: str
    file: str
    replace: tuple[tuple[str, str], ...] = ()
    content: str | None = None
    catches: tuple[str, ...] = ()
    base: Case | None = None
    says: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return f"lesson-{self.lesson}: {self.name}"

    def apply(self, workspace: Path) -> None:
        """Turn the solved `workspace` into this case, in place."""
        target = workspace / self.file
        if self.base is not None:
            self.base.apply(workspace)
        if self.content is not None:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(self.content, encoding="utf-8")
            return
        source = target.read_text(encoding="utf-8")
        for old, new in self.replace:
            if old not in source:
                raise FixtureOutOfDate(f"{self.label}: {old[:60]!r} is not in {self.file}")
            source = source.replace(old, new)
        target.write_text(source, encoding="utf-8")


def folder() -> Path:
    return kit.root() / "tests" / "fixtures"


def load(kind: str, lesson: int | None = None) -> list[Case]:
    """Every case of `kind` (WRONG or ALTERNATIVES), or one lesson's; none when the file is absent (a wheel)."""
    cases: list[Case] = []
    for key, tables in _parsed(kind).items():
        number = int(key.removeprefix("lesson-"))
        if lesson is not None and number != lesson:
            continue
        for table in tables:
            cases.append(Case(
                number, table["name"], table.get("file", kit.lesson(number).file),
                tuple((old, new) for old, new in table.get("replace", [])), table.get("content"),
                tuple(table.get("catches", [])), _base(table.get("base"), number, kind, cases),
                tuple(table.get("says", [])),
            ))
    return cases


def _parsed(kind: str) -> dict:
    """The fixture file, parsed once per version of it: every case that starts from an alternative looks it up, and
    the two files (1.3 MB) took 14 CPU s to parse once per such case (half the kit's test collection)."""
    path = folder() / f"{kind}.toml"
    try:
        found = path.stat()
    except FileNotFoundError:
        return {}
    return _parse(str(path), found.st_mtime_ns, found.st_size)


@functools.lru_cache(maxsize=8)
def _parse(path: str, mtime_ns: int, size: int) -> dict:
    return tomllib.loads(Path(path).read_text(encoding="utf-8"))


def _base(name: str | None, lesson: int, kind: str, earlier: list[Case]) -> Case | None:
    """The alternative a case starts from, found by its name: for an alternative, one listed before it."""
    if name is None:
        return None
    pool = [case for case in earlier if case.lesson == lesson] if kind == ALTERNATIVES else load(ALTERNATIVES, lesson)
    found = [case for case in pool if case.name == name]
    if not found:
        raise FixtureOutOfDate(f"lesson-{lesson}: there is no alternative named {name!r} to start from")
    return found[0]
