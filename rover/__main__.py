"""`python -m rover` run outside a workspace lands here, and says where to go instead.

Inside a workspace its own rover/ package (a regular package) always wins over this folder
(a namespace package, found last), so this only ever answers when there is no Rover to run.
"""
from __future__ import annotations

import sys
from pathlib import Path


def where_to_go(start: Path) -> str:
    for folder in (start, *start.parents):
        if (folder / ".copier-answers.yml").is_file() and (folder / "rover" / "__init__.py").is_file():
            return f"run it from the workspace folder, not from inside it: `cd {folder}`, then `python -m rover \"task\"`"
    return ("this folder is not a Rover workspace: cd into the one `workshop start` made (it holds rover/ and stash/), "
            "or make one with `workshop start lesson-0`")


if __name__ == "__main__":
    print(f"rover: {where_to_go(Path.cwd().resolve())}", file=sys.stderr)
    sys.exit(2)
