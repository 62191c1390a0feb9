"""Render a workspace: the copier template for a lesson, plus a pristine stash beside it."""
from __future__ import annotations

import re
import shutil
import warnings
from pathlib import Path

from grader.course import kit
from grader.course.requirement import kit_requirement
from grader.course.template_repo import has_commit, template_source, versions
from grader.course.transaction import private_temp
from grader.course.workspace import ANSWERS

PRISTINE = shutil.ignore_patterns("__pycache__", ".pytest_cache", "*.pyc")


def render(lesson: int, target: Path, solved: bool = False, ref: str = "HEAD") -> Path:
    """The workspace files alone: the copier template for `lesson` (at commit `ref`), plus a pristine stash."""
    import copier  # only rendering needs it; `workshop check` never pays for the import

    source = template_source()
    with private_temp("workshop-render-"), warnings.catch_warnings():  # copier's clone lands in there, and goes with it
        warnings.simplefilter("ignore")  # copier warns about a clone's uncommitted changes; they are meant
        copier.run_copy(str(source), str(target), data={"lesson": lesson, "solved": solved, "kit_requirement": kit_requirement()},
                        defaults=True, quiet=True, overwrite=True, vcs_ref=ref)
    copy_stash(target)
    return target


def copy_stash(target: Path) -> None:
    """A pristine stash beside Rover: its working directory, and the repo the scenarios change."""
    shutil.rmtree(target / "stash", ignore_errors=True)
    shutil.copytree(kit.root() / "stash", target / "stash", ignore=PRISTINE)


def pristine_file(lesson: int, relative: str, scratch: Path) -> bytes:
    """A file as `workshop start lesson-N` renders it: the stub of lesson N's tool, earlier tools solved."""
    return (render(lesson, scratch / "pristine") / relative).read_bytes()


def answers(workspace: Path) -> dict[str, str]:
    """The answers file's flat `key: value` lines."""
    return dict(re.findall(r"^(\w+):\s*(.*?)\s*$", (workspace / ANSWERS).read_text(encoding="utf-8"), flags=re.MULTILINE))


def rebase_answers(workspace: Path, lesson: int, solved: bool, scratch: Path) -> None:
    """Point the answers file at this machine's template repository, and at a commit it has.

    A workspace made on another laptop names another cache folder; one made by an older kit (or a
    cache since cleared) may name a commit this cache never made. The commit then becomes the kit
    version whose render of the lesson is closest to the workspace's own files.
    """
    source = template_source()
    found = answers(workspace)
    commit = found.get("_commit", "")
    if not has_commit(source, commit):
        commit = closest_version(workspace, lesson, solved, scratch)
    text = (workspace / ANSWERS).read_text(encoding="utf-8")
    text = re.sub(r"(?m)^_commit:.*$", f"_commit: {commit}", text)
    text = re.sub(r"(?m)^_src_path:.*$", f"_src_path: {source}", text)
    (workspace / ANSWERS).write_text(text, encoding="utf-8")


def closest_version(workspace: Path, lesson: int, solved: bool, scratch: Path, most: int = 5) -> str:
    """The kit version (commit) whose render of `lesson` differs from the workspace's files in the fewest files."""
    candidates = versions(template_source())[:most]
    if len(candidates) == 1:
        return candidates[0]

    def differences(commit: str) -> int:
        fresh = render(lesson, scratch / f"version-{commit[:12]}", solved, ref=commit)
        rendered = [path for path in fresh.rglob("*") if path.is_file() and ".git" not in path.parts]
        return sum(not (workspace / path.relative_to(fresh)).is_file()
                   or (workspace / path.relative_to(fresh)).read_bytes() != path.read_bytes()
                   for path in rendered if path.name != ANSWERS)

    return min(candidates, key=differences)  # min keeps the first of equals: the current kit
