"""Where the student's code was when it hung or crashed: the innermost line of theirs in a faulthandler dump."""
from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path
from typing import Callable


def crash_site(text: str, workspace: Path) -> str:
    """The innermost line of the student's code in a faulthandler dump (a hang or a crash), as `file line N`. The
    dump is the side's to write: the caller reads it through the run folder's one reader (RunFolder.read)."""
    for filename, line in re.findall(r'File "([^"]+)", line (\d+)', text):
        if filename.startswith(str(workspace)):
            return f"{Path(filename).relative_to(workspace)} line {line}"
    return ""


def dump_stack(pids: list[int], log: Callable[[], str], workspace: Path) -> str:
    """Ask a hung process for its Python traceback (SIGUSR1, faulthandler) and find the student's line in it."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGUSR1)
        except OSError:
            pass
    deadline = time.monotonic() + 0.5
    while time.monotonic() < deadline and not crash_site(log(), workspace):
        time.sleep(0.02)
    return crash_site(log(), workspace)
