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
