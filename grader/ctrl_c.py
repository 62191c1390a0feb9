"""Ctrl-C, the same everywhere in the kit: one short line, exit status 130, never a traceback.

Stdlib only, and the first thing `grader.cli` imports: from the moment this module is loaded
until `loaded()`, a Ctrl-C exits at once, quietly (the imports of click, rich and the commands take
most of a command's first second). After that it is a KeyboardInterrupt again, so every `finally`
runs, and `exits_quietly` around each command turns it into the same exit.
"""
from __future__ import annotations

import contextlib
import signal
import sys
import threading
from typing import Iterator, NoReturn

INTERRUPTED = 130


def _while_loading(signum, frame) -> None:
    stop()


_MAIN = threading.current_thread() is threading.main_thread()
_BEFORE = signal.signal(signal.SIGINT, _while_loading) if _MAIN else None
_BEFORE = getattr(_BEFORE, "before", _BEFORE)  # grader.cli's first handler stands for the one before it


def loaded() -> None:
    """The kit's imports are done: Ctrl-C goes back to what it was (a KeyboardInterrupt)."""
    if _MAIN:
        signal.signal(signal.SIGINT, _BEFORE if _BEFORE is not None else signal.default_int_handler)


@contextlib.contextmanager
def exits_quietly() -> Iterator[None]:
    """Turn a KeyboardInterrupt inside into `stop()`."""
    try:
        yield
    except KeyboardInterrupt:
        stop()


def ignore_ctrl_c() -> None:
    """From here on a Ctrl-C changes nothing (outside the main thread, which has no say over signals, nothing)."""
    with contextlib.suppress(ValueError):
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def stop(message: str = "interrupted") -> NoReturn:
    """Leave with status 130; a second Ctrl-C on the way out changes nothing."""
    ignore_ctrl_c()
    forget_interrupts()
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"\nworkshop: {message}\n")
        sys.stderr.flush()
    raise SystemExit(INTERRUPTED)


def forget_interrupts() -> None:
    """CPython marks a KeyboardInterrupt that ends code run from a string (dataclasses and namedtuple build their
    methods so, and copier's imports make many) as unhandled even once it is caught, and at exit then kills the
    process by SIGINT: status -2, not 130, after "workshop: interrupted". Running a string clears the mark."""
    exec("")
