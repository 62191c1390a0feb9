"""File helpers the file tools share."""
from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

from rover.tools.result import ToolError


def write_atomic(path: Path, data: bytes) -> None:
    """Write `data` to `path` so that readers see the old file or the new one, never half of each.

    The bytes go to a temporary file beside the target (a rename is only atomic within one file
    system, and /tmp is often another), which then replaces the target in one rename. A crash
    mid-write leaves the original untouched. A symlink is followed, so the file it points at
    changes and the link stays a link. An existing file keeps its mode; a read-only one is refused.
    """
    target = Path(os.path.realpath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    mode = _mode(target)
    if mode is not None and not mode & 0o222:
        raise ToolError(f"{path} is read-only (mode {mode:o}), so it was left unchanged. Make it writable first.")
    if mode is not None and not os.access(target, os.W_OK):  # the bits allow it: another user's file, or a read-only disk
        raise ToolError(f"{path} cannot be written here (its mode {mode:o} allows it, but it is another user's file or on a "
                        "read-only file system), so it was left unchanged.")
    temp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
    # O_EXCL: never reuse a file someone else made. 0o666: the kernel applies the umask, as for any new file.
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            if mode is not None:
                os.fchmod(out.fileno(), mode)
        os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def _mode(path: Path) -> int | None:
    """The permission bits of an existing file, or None for a new one."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return None
