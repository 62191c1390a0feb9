"""Where the kit's files are, and the lesson manifest that names everything else.

In a clone or an editable install the kit is the repo itself; a built wheel carries the same
folders inside the package, under grader/kit/.
"""
from __future__ import annotations

import re

import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@lru_cache(maxsize=1)
def root() -> Path:
    package = Path(__file__).resolve().parent.parent
    packaged = package / "kit"
    return packaged if (packaged / "copier.yml").is_file() else package.parent


@dataclass(frozen=True)
class Check:
    id: str
    lesson: int
    title: str
    hints: tuple[str, ...]
    points: int = 1
    slow: bool = False


@dataclass(frozen=True)
class Requirement:
    """A sentence of a lesson text, tagged `[R5.3]` there, and the checks that test it.

    `demands`: the words, numbers and formats those checks insist on, each of which the tagged
    sentence must say (a check may only demand what the lesson asks for).
    """
    id: str
    checks: tuple[str, ...]
    demands: tuple[str, ...] = ()


@dataclass(frozen=True)
class Lesson:
    number: int
    title: str
    tool: str
    file: str
    scenario: str
    checks: tuple[Check, ...]

    @property
    def id(self) -> str:
        return f"lesson-{self.number}"

    @property
    def text(self) -> Path:
        return root() / "lessons" / self.id / "README.md"

    @property
    def script(self) -> Path:
        return root() / "lessons" / self.id / "scenario.json"

    @property
    def stub(self) -> Path:
        """The template file, whose name may carry a lesson condition: `{% if lesson is ge 2 %}bash.py{% endif %}.jinja`."""
        folder, name = (root() / "rover" / "template" / self.file).parent, Path(self.file).name
        found = [path for path in folder.glob("*.jinja") if path.name in (f"{name}.jinja", f"{name}{{% endif %}}.jinja")
                 or path.name.endswith(f"%}}{name}{{% endif %}}.jinja")]
        return found[0] if found else folder / f"{name}.jinja"

    @property
    def solution(self) -> Path:
        return root() / "solutions" / self.file

    @property
    def requirements_table(self) -> Path:
        return root() / "lessons" / self.id / "requirements.toml"

    def requirements(self) -> tuple[Requirement, ...]:
        """The lesson's requirements table, in the order it lists them; none when it has no table (yet)."""
        if not self.requirements_table.is_file():
            return ()
        table = tomllib.loads(self.requirements_table.read_text(encoding="utf-8"))
        return tuple(Requirement(key, tuple(spec.get("checks", [])), tuple(spec.get("demands", []))) for key, spec in table.items())


@lru_cache(maxsize=1)
def lessons() -> tuple[Lesson, ...]:
    manifest = tomllib.loads((root() / "lessons" / "manifest.toml").read_text(encoding="utf-8"))
    found = []
    for key, table in manifest.items():
        number = int(key.removeprefix("lesson-"))
        checks = tuple(
            Check(check_id, number, spec["title"], tuple(spec["hints"]), spec.get("points", 1), spec.get("slow", False))
            for check_id, spec in table.get("checks", {}).items()
        )
        found.append(Lesson(number, table["title"], table["tool"], table["file"], table["scenario"], checks))
    return tuple(sorted(found, key=lambda lesson: lesson.number))


def lesson(number: int) -> Lesson:
    return lessons()[number]


class UnknownLesson(ValueError):
    pass


def parse_lesson_id(text: str) -> int:
    """'lesson-3' or '3' to 3; anything else names the lessons there are."""
    number = text.removeprefix("lesson-")
    if number.isdigit() and int(number) < len(lessons()):
        return int(number)
    names = ", ".join(lesson.id for lesson in lessons())
    meant = re.fullmatch(r"\s*lesson[\s_.:]*(\d+)\s*", text, flags=re.IGNORECASE)  # lesson1, Lesson_1, "lesson 1"
    if meant and int(meant[1]) < len(lessons()):
        raise UnknownLesson(f"there is no lesson {text!r}; did you mean lesson-{int(meant[1])}?")
    raise UnknownLesson(f"there is no lesson {text!r}; the lessons are {names}")
