"""grader/'s imports, read with `ast`: no circle, and no layer importing one above it (STYLE.md's layout; each
package's docstring says the same). Imports inside functions count too: a lazy import is still a dependency."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

GRADER = Path(__file__).resolve().parents[1] / "grader"

# What each room may import besides itself; the root package (`grader`, its STARTED) is everyone's.
MAY_IMPORT = {
    "errors": set(),
    "ctrl_c": set(),
    "course": {"errors"},
    "boundary": {"errors"},
    "transcripts": {"errors"},
    "grading": {"errors", "course", "boundary"},
    "classroom": {"errors", "course", "boundary", "grading"},
    "commands": {"errors", "ctrl_c", "course", "boundary", "grading", "classroom", "transcripts"},
    "cli": {"errors", "ctrl_c", "course", "boundary", "grading", "classroom", "transcripts", "commands"},
}
# The boundary's interface (grader/boundary/__init__.py): the only modules of it a room above may import.
INTERFACE = {"side", "proxy", "runfolder", "safe_files", "clocks", "stopwatch", "processes", "hidden_memory"}


def module_name(path: Path, root: Path = GRADER) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(root: Path = GRADER) -> dict[str, Path]:
    return {module_name(path, root): path for path in sorted(root.rglob("*.py"))}


def imports(path: Path, known: set[str], root: Path = GRADER) -> set[str]:
    """The grader modules `path` imports, anywhere in it (`from grader.x import y` names y's module if y is one)."""
    found = set()
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            found.update(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names)
    return {module for module in found if module in known}


def graph(root: Path = GRADER) -> dict[str, set[str]]:
    known = modules(root)
    return {name: imports(path, set(known), root) - {name} for name, path in known.items()}


def room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def upward(edges: dict[str, set[str]]) -> list[str]:
    """Each import that runs from a room to one it may not import, or past the boundary's interface."""
    wrong = []
    for source, targets in sorted(edges.items()):
        for target in sorted(targets):
            here, there = room(source), room(target)
            if there in ("", here):
                continue
            if there not in MAY_IMPORT.get(here, set()):
                wrong.append(f"{source} -> {target}: {here or 'grader'} may not import {there}")
            elif there == "boundary" and target.split(".")[2:3] != [] and target.split(".")[2] not in INTERFACE:
                wrong.append(f"{source} -> {target}: past the boundary's interface ({', '.join(sorted(INTERFACE))})")
    return wrong


def test_no_import_circle_in_grader():
    assert circles(graph()) == []


def test_no_layer_imports_one_above_it():
    assert upward(graph()) == []


def test_every_room_is_placed():
    rooms = {room(name) for name in modules()} - {""}
    assert rooms <= set(MAY_IMPORT), f"a room with no place in the layers: {sorted(rooms - set(MAY_IMPORT))}"


def test_the_boundary_names_no_lesson_or_check():
    """Not even by a string: the workers are told the harness's name by the grader, at run time."""
    named = [str(path.relative_to(GRADER)) for path in (GRADER / "boundary").rglob("*.py")
             if "grader.grading" in path.read_text(encoding="utf-8") or "grader.course" in path.read_text(encoding="utf-8")]
    assert named == []


@pytest.mark.parametrize("source, expected", [
    ({"a.py": "", "b.py": ""}, ([], [])),
    ({"boundary/__init__.py": "", "boundary/proxy.py": "from grader.grading import y\n", "grading/__init__.py": "",
      "grading/y.py": "def f():\n    from grader.boundary.proxy import z\n"},
     ([["grader.boundary.proxy", "grader.grading.y"]], ["grader.boundary.proxy -> grader.grading.y: boundary may not import grading"])),
    ({"course/__init__.py": "", "course/w.py": "from grader.errors import E\n", "errors.py": "import grader.course.w\n"},
     ([["grader.course.w", "grader.errors"]], ["grader.errors -> grader.course.w: errors may not import course"])),
    ({"boundary/__init__.py": "", "boundary/worker.py": "", "grading/__init__.py": "",
      "grading/lab.py": "from grader.boundary import worker\n"},
     ([], ["grader.grading.lab -> grader.boundary.worker: past the boundary's interface "
           "(clocks, hidden_memory, processes, proxy, runfolder, safe_files, side, stopwatch)"])),
])
def test_the_walk_finds_circles_and_upward_imports(tmp_path, source, expected):
    """The walk itself, on small made-up trees: it must see a lazy import, a circle, an upward one."""
    root = tmp_path / "grader"
    for name, text in {"__init__.py": "", **source}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    edges = graph(root)
    assert (circles(edges), upward(edges)) == expected


def test_student_code_in_this_process_is_asked_for_by_name(tmp_path):
    """No worker is no default: a Lab without one refuses, and in-process is its own, named constructor."""
    from grader.grading.inprocess import InProcess
    from grader.grading.lab import Lab

    with pytest.raises(TypeError, match="Lab.in_process"):
        Lab(tmp_path, tmp_path, None)
    lab = Lab.in_process(tmp_path, tmp_path)
    try:
        assert isinstance(lab._worker, InProcess)
    finally:
        lab.close()
