"""The Linux-only extras the run uses where present and never assumes: a subreaper, a parent-death signal, RLIMIT_AS.

`WORKSHOP_LINUX_EXTRAS=0` switches them off (what macOS or a dev container without them looks like); the run is then
less tidy, never wrong: verdicts stay the same.
"""
from __future__ import annotations

import ctypes
import os
import sys

PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36


def extras() -> bool:
    return sys.platform.startswith("linux") and os.environ.get("WORKSHOP_LINUX_EXTRAS", "1") != "0"


def prctl(option: int, value: int) -> bool:
    """One Linux prctl call; False where it is not available or switched off."""
    if not extras():
        return False
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False
