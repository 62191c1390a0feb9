"""The paths the student's side must read: the system, the Python environment and the kit (never the whole disk)."""
from __future__ import annotations

import sys
from pathlib import Path

SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix")


def needed_paths() -> list[Path]:
    """The Python environment (prefixes, sys.path's folders) and the kit, outermost first, none the home folder itself."""
    import grader

    home = Path.home().resolve()
    found: list[Path] = []
    candidates = [sys.prefix, sys.base_prefix, sys.exec_prefix, Path(sys.executable).parent,
                  Path(grader.__file__).resolve().parent.parent, *[entry for entry in sys.path if entry]]
    for candidate in candidates:
        path = Path(candidate)
        if not path.is_absolute() or not path.exists():
            continue
        path = path.resolve()
        if path == Path("/") or path == home or path in home.parents:
            continue  # never the whole disk or the whole home folder
        if not any(path == seen or seen in path.parents for seen in found):
            found = [seen for seen in found if path not in seen.parents] + [path]
    return sorted(found)


def links_on_the_way() -> list[tuple[Path, str]]:
    """The symlinks on the way to the Python environment, as (link, target), outermost first.

    needed_paths() gives resolved folders, but a venv is found through its unresolved path (pyvenv.cfg beside
    sys.executable): where that path runs through a link (a venv reached by a link), the side needs the link too."""
    import os

    found: list[tuple[Path, str]] = []
    for candidate in (sys.executable, sys.prefix):
        path = Path(candidate)
        for step in reversed([path, *path.parents]):
            if step.is_symlink() and not any(step == link for link, _ in found):
                found.append((step, os.readlink(step)))
    return found
