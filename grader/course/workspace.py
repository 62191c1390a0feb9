"""Find the student's workspace and read which lesson it is on."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ANSWERS = ".copier-answers.yml"


class NotAWorkspace(ValueError):
    pass


@dataclass(frozen=True)
class Workspace:
    path: Path
    lesson: int
    solved: bool = False

    @classmethod
    def find(cls, start: Path | None = None) -> Workspace:
        """The workspace containing `start` (default: the current directory)."""
        here = (start or Path.cwd()).resolve()
        for folder in (here, *here.parents):
            answers = folder / ANSWERS
            if answers.is_file():
                return cls.load(folder)
        raise NotAWorkspace(
            f"{here} is not inside a Rover workspace (no {ANSWERS} found); "
            "cd into one, or make one with `workshop start lesson-0`"
        )

    @classmethod
    def load(cls, folder: Path) -> Workspace:
        # The answers file is flat `key: value` YAML; reading it by hand keeps `workshop check` free of a YAML import.
        text = (folder / ANSWERS).read_text(encoding="utf-8")
        values = dict(re.findall(r"^(\w+):\s*(.*?)\s*$", text, flags=re.MULTILINE))
        from grader.course import kit

        if not values.get("lesson", "").isdigit() or int(values["lesson"]) >= len(kit.lessons()):
            raise NotAWorkspace(f"{folder / ANSWERS} names no lesson this kit has (lessons 0 to {len(kit.lessons()) - 1}); was it edited by hand?")
        return cls(folder, int(values["lesson"]), values.get("solved") == "true")


def here() -> Workspace:
    """The workspace around the current directory, or the one-line error every command gives."""
    from grader.errors import WorkshopError

    try:
        return Workspace.find()
    except NotAWorkspace as problem:
        raise WorkshopError(str(problem)) from None
