"""Ctrl-C, the same everywhere in the kit: one short line, exit status 130, never a traceback.

Stdlib only, so `grader.cli` can put its own imports (click, rich, the commands) under it:
a Ctrl-C in the first second of a command is as quiet as one in the middle.
"""
from __future__ import annotations

import contextlib
import signal
import sys
from typing import Iterator, NoReturn

INTERRUPTED = 130


@contextlib.contextmanager
def exits_quietly() -> Iterator[None]:
    """Turn a KeyboardInterrupt inside into `stop()`."""
    try:
        yield
    except KeyboardInterrupt:
        stop()


def stop(message: str = "interrupted") -> NoReturn:
    """Leave with status 130; a second Ctrl-C on the way out changes nothing."""
    with contextlib.suppress(ValueError):  # ValueError: not the main thread, which has no say over signals
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"\nworkshop: {message}\n")
        sys.stderr.flush()
    raise SystemExit(INTERRUPTED)
