"""Who the student's side is on the host: never the host's root, and never holding the grader's keyrings.

A grader run as root (a root shell, a container, an autograder's setup) would make the side's uid in its user
namespace the host's uid 0: the owner of /proc/sys, so `core_pattern` was writable and the kernel ran a script of the
student's as real root. There the side is nobody (65534) in its namespace and, on the host, a uid of this grader's
own (side_id(): unused, drawn at random from a range no distribution, systemd or container manager hands out; bwrap
maps it), and every file and folder the grader makes for it in the run folder is handed to that uid, so the side can
write there as it could when grader and side shared one uid; root-only files (/etc/shadow-, /proc/sys) are out of
its reach by their owner alone. Not the host's nobody: daemons run as nobody, and so did every other root grader's
side, and the run folder (0700, but the side's) was theirs to enter and rewrite. A grader run by an ordinary user
gives the side that user's uid, as before.

Keyrings are no namespace's: a process holds its session keyring across every boundary. The side is started from a
thread that first joins a new, empty session keyring for each start (credentials are per thread in Linux, and a child
takes its creator thread's), so the grader's own keys, and the instructor's, are never the side's.
"""
from __future__ import annotations

import functools
import os
import queue
import threading
from typing import Callable, TypeVar

INSIDE = 65534  # the side's uid and gid within its user namespace when the grader is root (nobody)
SIDE_IDS = (0x7000_0000, 0x7FF0_0000)  # where side_id() draws from: above systemd's container ranges, below its own
SUBORDINATE = ("/etc/subuid", "/etc/subgid")  # ranges handed to users' own namespaces (podman, LXD): never drawn
DRAWS = 1000  # draws before side_id() gives up (a machine whose every id in the range is someone's)
KEYCTL_JOIN_SESSION_KEYRING = 1
Result = TypeVar("Result")


def grader_is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


@functools.cache
def side_id() -> int:
    """The host uid (and gid) of this grader's side when it is root: one no user or group of this machine has, drawn
    once per grader process, so nothing else on the host runs as it."""
    import grp
    import pwd
    import secrets

    handed = _subordinate()
    for _ in range(DRAWS):
        number = SIDE_IDS[0] + secrets.randbelow(SIDE_IDS[1] - SIDE_IDS[0])
        if not (any(start <= number < end for start, end in handed) or _known(pwd.getpwuid, number)
                or _known(grp.getgrgid, number)):
            return number
    from grader.errors import WorkshopError

    raise WorkshopError(f"no unused uid for the student's side between {SIDE_IDS[0]:#x} and {SIDE_IDS[1]:#x} ({DRAWS:,} drawn, "
                        f"each a user's, a group's or in {' or '.join(SUBORDINATE)}); grade as an ordinary user instead of root")


def _subordinate() -> list[tuple[int, int]]:
    """The id ranges /etc/subuid and /etc/subgid hand out (`name:start:count` lines), as (start, end)."""
    ranges = []
    for path in SUBORDINATE:
        try:
            with open(path, encoding="utf-8", errors="replace") as lines:
                for line in lines:
                    parts = line.strip().split(":")
                    if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
                        ranges.append((int(parts[1]), int(parts[1]) + int(parts[2])))
        except OSError:
            pass
    return ranges


def _known(lookup, number: int) -> bool:
    try:
        lookup(number)
        return True
    except KeyError:
        return False


def hand_over(fd: int) -> None:
    """Give a file or folder the grader made for the side (by its fd) to the side's uid, where the grader is root."""
    if grader_is_root():
        os.fchown(fd, side_id(), side_id())


def hand_over_entry(name: str, dir_fd: int | None = None) -> None:
    """The same for an entry by name (never following a link: a link itself is handed over)."""
    if grader_is_root():
        os.chown(name, side_id(), side_id(), dir_fd=dir_fd, follow_symlinks=False)


def in_fresh_keyring(start: Callable[[], Result]) -> Result:
    """start() called in the starter thread, which joins a new anonymous session keyring first, so the processes it
    starts hold that keyring, not this process's; its result, or what it raised.

    One thread for the whole process, never one per start: a child's parent-death signal (bwrap's --die-with-parent)
    fires when the thread that started it ends."""
    global _requests
    with _lock:
        if _requests is None:
            _requests = queue.SimpleQueue()
            threading.Thread(target=_starter, args=(_requests,), name="side-starter", daemon=True).start()
    outcome: dict[str, object] = {}
    done = threading.Event()
    _requests.put((start, outcome, done))
    interrupted: BaseException | None = None
    while not done.is_set():
        try:
            done.wait()
        except BaseException as stop:  # Ctrl-C, SIGTERM's SystemExit: raised once the start is whole, so that what it
            interrupted = interrupted or stop  # started is the caller's to end, never half made behind its back
    if interrupted is not None:
        raise interrupted
    if "failure" in outcome:
        raise outcome["failure"]  # type: ignore[misc]
    return outcome["result"]  # type: ignore[return-value]


_lock = threading.Lock()
_requests: queue.SimpleQueue | None = None


def _starter(requests: queue.SimpleQueue) -> None:
    while True:
        start, outcome, done = requests.get()
        try:
            _join_new_session_keyring()
            outcome["result"] = start()
        except BaseException as failure:  # handed back to the caller's thread, whatever it was
            outcome["failure"] = failure
        finally:
            done.set()


def _join_new_session_keyring() -> None:
    """keyctl(KEYCTL_JOIN_SESSION_KEYRING, NULL) for the calling thread only; where keyrings are missing or refused
    (a container's own filter), nothing to do: the side cannot reach them either."""
    import ctypes

    from grader.boundary.backends import libseccomp

    lib = libseccomp.library()
    number = lib.seccomp_syscall_resolve_name(b"keyctl") if lib else -1
    if number < 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall(ctypes.c_long(number), ctypes.c_long(KEYCTL_JOIN_SESSION_KEYRING), ctypes.c_void_p(None))
