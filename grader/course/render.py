"""Render a workspace: the copier template for a lesson, plus a pristine stash beside it."""
from __future__ import annotations

import shutil
import tempfile
import warnings
from pathlib import Path

from grader.course import kit
from grader.course.requirement import kit_requirement
from grader.course.template_repo import template_source

PRISTINE = shutil.ignore_patterns("__pycache__", ".pytest_cache", "*.pyc")


def render(lesson: int, target: Path, solved: bool = False) -> Path:
    """The workspace files alone: the copier template for `lesson`, plus a pristine stash."""
    import copier  # only rendering needs it; `workshop check` never pays for the import

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # copier warns about a clone's uncommitted changes; they are meant
        answers = {"lesson": lesson, "solved": solved, "kit_requirement": kit_requirement()}
        copier.run_copy(str(template_source()), str(target), data=answers, defaults=True, quiet=True, overwrite=True, vcs_ref="HEAD")
    copy_stash(target)
    return target


def copy_stash(target: Path) -> None:
    """A pristine stash beside Rover: its working directory, and the repo the scenarios change."""
    shutil.rmtree(target / "stash", ignore_errors=True)
    shutil.copytree(kit.root() / "stash", target / "stash", ignore=PRISTINE)


def pristine_file(lesson: int, relative: str) -> bytes:
    """A file as `workshop start lesson-N` renders it: the stub of lesson N's tool, earlier tools solved."""
    with tempfile.TemporaryDirectory(prefix="workshop-render-") as scratch:
        return (render(lesson, Path(scratch) / "ws") / relative).read_bytes()
