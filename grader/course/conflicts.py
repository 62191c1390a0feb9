"""A merge that `workshop next` left for the student: markers labelled for people, and what to do about it.

copier marks a conflict `<<<<<<< before updating` / `>>>>>>> after updating`; the student reads `yours` and
`lesson N` instead. A check of a workspace in that state says it is an unfinished merge, not a syntax error.
"""
from __future__ import annotations

import re
from pathlib import Path

from grader.course import git

COPIER_START, COPIER_END = "<<<<<<< before updating", ">>>>>>> after updating"


def relabel(folder: Path, files: list[str], lesson: int) -> None:
    """Name the two sides of each conflict in `files` for the student: theirs is `yours`, the template's `lesson N`."""
    for name in files:
        path = folder / name
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        relabelled = re.sub(rf"(?m)^{re.escape(COPIER_START)}$", "<<<<<<< yours", text)
        relabelled = re.sub(rf"(?m)^{re.escape(COPIER_END)}$", f">>>>>>> lesson {lesson}", relabelled)
        if relabelled != text:
            path.write_text(relabelled, encoding="utf-8")


def unresolved(workspace: Path | None) -> list[str]:
    """The files of `workspace` still holding a conflict; none when git cannot tell (no git, no repository)."""
    if workspace is None:
        return []
    try:
        return git.conflicted(workspace)
    except git.GitProblem:
        return []


def first_line(workspace: Path, name: str) -> int | None:
    """The line of the first `<<<<<<<` marker in a file, for the student to jump to."""
    try:
        lines = (workspace / name).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return next((number for number, line in enumerate(lines, 1) if line.startswith(git.MARKERS[0])), None)


def explained(workspace: Path, files: list[str], lesson: int) -> tuple[str, str]:
    """(what the conflict is and how to finish it, the one command that undoes the move instead)."""
    where = ", ".join(f"{name} line {first_line(workspace, name)}" if first_line(workspace, name) else name for name in files)
    finish = (f"`workshop next` merged lesson {lesson} into your work and left a conflict to resolve in {where}. Between "
              f"`<<<<<<< yours` and `=======` is your version; between `=======` and `>>>>>>> lesson {lesson}` the "
              f"lesson's. Keep what you want, delete the marker lines, then "
              f"`{git.commit_command(workspace, 'Resolve')}`.")
    abort = git.abort_command(workspace)
    if abort:  # a merge of the student's own, not the kit's
        finish = (f"a merge you started left a conflict to resolve in {where}: keep what you want between the <<<<<<< "
                  f"and >>>>>>> markers, delete the marker lines, then `{git.commit_command(workspace, 'Resolve')}`.")
    return finish, f"`{abort}`" if abort else "`git reset --hard && git clean -fd`"
