"""macOS: the student's side under `sandbox-exec` with a generated Seatbelt profile.

The profile allows everything a Python process needs except: no network at all, no writes outside the run folder
(and /dev's null and tty), and no reads of the caller's home folder except the paths the run needs (the kit, the
Python environment, the workspace, the run folder). Paths are handed to the profile as parameters (-D), never
pasted into its text, so no path can change its meaning.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

from grader.boundary.backends.process import Processes
from grader.boundary.backends.paths import needed_paths
from grader.boundary.runfolder import RunFolder

SANDBOX_EXEC = "/usr/bin/sandbox-exec"


def why_not() -> str | None:
    if sys.platform != "darwin":
        return "sandbox-exec (Seatbelt) is macOS only"
    if not shutil.which(SANDBOX_EXEC):
        return f"{SANDBOX_EXEC} is missing: it ships with macOS; use the dev container instead"
    return None


def profile(readable: int) -> str:
    """The profile text; parameters RUN, HOME and READ_0..READ_{readable-1} are given with -D."""
    reads = "".join(f'\n  (subpath (param "READ_{n}"))' for n in range(readable))
    return f"""(version 1)
(allow default)
(deny network*)
(deny file-write*)
(allow file-write*
  (subpath (param "RUN"))
  (literal "/dev/null")
  (literal "/dev/tty")
  (literal "/dev/dtracehelper"))
(deny file-read* (subpath (param "HOME")))
(allow file-read*
  (subpath (param "RUN")){reads})
"""


def command(inner: list[str], run: Path, home: Path, readable: list[Path]) -> list[str]:
    params = ["-D", f"RUN={run}", "-D", f"HOME={home}"]
    for number, path in enumerate(readable):
        params += ["-D", f"READ_{number}={path}"]
    return [SANDBOX_EXEC, "-p", profile(len(readable)), *params, *inner]


class Seatbelt(Processes):
    name = "seatbelt"

    def wrap(self, inner: list[str], folder: RunFolder, workspace: Path, cwd: Path) -> list[str]:
        return command(inner, folder.path, Path.home(), [*needed_paths(), workspace])
