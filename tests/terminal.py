"""Run a command in a real terminal (a pty of a given size) and read back what a person would see."""
from __future__ import annotations

import fcntl
import os
import re
import select
import signal
import struct
import subprocess
import termios
import time
from pathlib import Path

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def in_terminal(command: list[str], cwd: Path, columns: int = 80, rows: int = 24, env: dict | None = None,
                timeout: float = 120, interrupt_after: float | None = None, interrupt_once: str | None = None) -> tuple[int, str]:
    """(exit status, the screen's text: lines as shown, colours stripped). Stdin, stdout and stderr are the pty, as
    in a terminal window; `interrupt_after` seconds, or two seconds after `interrupt_once` shows on the screen, sends the Ctrl-C a
    person would type (the terminal echoes ^C)."""
    leader, follower = os.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    environment = {**os.environ, "TERM": "xterm-256color", "COLUMNS": str(columns), "LINES": str(rows), **(env or {})}
    process = subprocess.Popen(command, cwd=cwd, stdin=follower, stdout=follower, stderr=follower, env=environment,
                               start_new_session=True, preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
    os.close(follower)
    seen, started, interrupted = b"", time.monotonic(), False
    try:
        while True:
            if interrupt_once is not None and interrupt_once.encode() in seen and interrupt_after is None:
                interrupt_after = time.monotonic() - started + 2  # two seconds after it shows: the command is ready
            if not interrupted and interrupt_after is not None and time.monotonic() - started > interrupt_after:
                os.write(leader, b"\x03")  # the terminal turns it into SIGINT for the foreground group, and echoes ^C
                interrupted = True
            ready, _, _ = select.select([leader], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(leader, 65536)
                except OSError:  # the other side closed: the command is done
                    break
                if not chunk:
                    break
                seen += chunk
            elif process.poll() is not None:
                break
            if time.monotonic() - started > timeout:
                raise TimeoutError(f"{command} still running after {timeout} s; it printed {seen[-500:]!r}")
        status = process.wait(timeout=10)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        os.close(leader)
    text = ANSI.sub("", seen.decode("utf-8", "replace")).replace("\r\n", "\n").replace("\r", "\n")
    return status, text


def unbroken(text: str, words: list[str]) -> list[str]:
    """The `words` (commands, URLs) that do not appear whole on one line of `text`."""
    lines = text.splitlines()
    return [word for word in words if not any(word in line for line in lines)]


def too_long(text: str, columns: int) -> list[str]:
    """Lines longer than the terminal is wide: the terminal itself breaks them at the last column, mid-word or mid-URL."""
    return [line for line in text.splitlines() if len(line) > columns]
