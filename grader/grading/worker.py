"""The process the checks run in: `python -m grader.grading.worker WORKSPACE ORDERS_FD REPORT_FD`.

It imports the student's code, so anything can happen here: infinite loops, sys.exit,
os._exit, a flood of output. The parent (grader.grading.runner) owns the clock and the kill switch;
this side reads check ids, one per line, from ORDERS_FD, runs each, and reports it as a JSON
line on REPORT_FD. Its own stdin, stdout and stderr are /dev/null, so nothing the student's
code reads or prints can get mixed into the conversation.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import traceback
from pathlib import Path


def main(argv: list[str]) -> None:
    workspace, orders, report = Path(argv[0]), os.fdopen(int(argv[1]), encoding="utf-8"), os.fdopen(int(argv[2]), "w", buffering=1, encoding="utf-8")
    _silence_output()
    sys.path.insert(0, str(workspace))
    # Scenarios run `python -m pytest` through the student's bash tool: make that the grader's Python.
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # stash's suite needs no plugins; loading them costs ~1 s a run
    os.environ["ROVER_ANSWERS"] = "y"  # from lesson 6 the gate asks before unlisted commands: the grader says yes (gate checks script their own)
    sys.dont_write_bytecode = True  # keep the student's tree free of grader-made __pycache__ churn
    from grader.grading import checks

    for line in orders:
        check_id = line.strip()
        status, message = _run_one(checks, check_id, workspace)
        report.write(json.dumps({"id": check_id, "status": status, "message": message}) + "\n")


def _run_one(checks, check_id: str, workspace: Path) -> tuple[str, str]:
    tmp = Path(tempfile.mkdtemp(prefix="workshop-check-"))
    try:
        lesson = int(check_id.split(":", 1)[0])
        checks.load(lesson)
        checks.REGISTRY[check_id.split(":", 1)[1]](checks.Lab(workspace, tmp))
        return "passed", ""
    except checks.CheckFailed as failure:
        return "failed", str(failure)
    except checks.StudentCrashed as crash:
        return "error", str(crash)
    except NotImplementedError as todo:
        return "failed", f"not written yet: {todo}"
    except SystemExit as exit_call:
        return "error", f"the code called sys.exit({exit_call.code!r}); return or raise instead of exiting"
    except BaseException as crash:  # the student's bug, reported, not raised
        return "error", _describe(crash, workspace)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _describe(crash: BaseException, workspace: Path) -> str:
    """The exception, and the last line of the student's own code it passed through."""
    where = ""
    if isinstance(crash, SyntaxError) and crash.filename:
        where = f" in {_relative(crash.filename, workspace)} line {crash.lineno}"
    else:
        for frame in reversed(traceback.extract_tb(crash.__traceback__)):
            if frame.filename.startswith(str(workspace)):
                where = f" in {_relative(frame.filename, workspace)} line {frame.lineno}"
                break
    return f"{type(crash).__name__}{where}: {crash}"


def _relative(filename: str, workspace: Path) -> str:
    try:
        return str(Path(filename).relative_to(workspace))
    except ValueError:
        return filename


def _silence_output() -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)


if __name__ == "__main__":
    main(sys.argv[1:])
