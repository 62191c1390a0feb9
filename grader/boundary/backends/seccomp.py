"""The calls the bwrap side may not make, as a seccomp filter bwrap installs (`--seccomp FD`).

Each lets code hold disk or memory the grader's looks cannot count, or hide an endless loop behind a busy machine:
`fallocate` reserves gigabytes in one call past the 128 MiB file-size limit; `memfd_create`, SysV `shmget` and
`msgget` hold memory no process maps (a message queue outlives its writer); lowering one's own priority
(`setpriority`, `sched_setscheduler`, `sched_setattr`) makes a loop wait in the run queue, which the clock counts as
the machine's fault; io_uring would make the same calls
(a fallocate among them) where no filter sees them. New namespaces (`unshare`, `setns`, `clone` with a CLONE_NEW*
flag) would give the code a user namespace of its own, and in it the right to mount a tmpfs that no size bounds and
no process holds, or a network namespace whose sockets no look reaches; `clone3` hides its flags in memory a filter
cannot read, so it is refused whole and glibc falls back to `clone`. `sendfile`, `splice`, `tee` and `vmsplice` hand
pages to a pipe or a socket by reference: a file's cached pages queued that way (1.3 GB in 322 loopback connections)
can be neither dropped nor seen apart from the cache the kernel could drop. They fail with an error, as on a system
without them: glibc's `posix_fallocate` then writes the file (bounded by the size limit), `nice` warns and runs the
command anyway, Python's `shutil` and `socket.sendfile` copy through read and write. Another architecture's calls
(x32, i386 on x86_64) are refused whole.
"""
from __future__ import annotations

import errno
import os
import struct

_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000
_LOAD, _JEQ, _JGE, _JSET, _RETURN = 0x20, 0x15, 0x35, 0x45, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, |JGE|K, |JSET|K, BPF_RET|K
_X32 = 0x40000000
_FIRST_ARGUMENT = 16  # offset of seccomp_data.args[0]'s low half (little-endian: both arches below)
_NEW_NAMESPACES = 0x7E020000  # CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET (NEWTIME is an exit signal bit in clone)
REFUSED = {"fallocate": errno.EOPNOTSUPP, "memfd_create": errno.ENOSYS, "shmget": errno.ENOSYS, "msgget": errno.ENOSYS,
           "setpriority": errno.EPERM, "sched_setscheduler": errno.EPERM, "sched_setattr": errno.EPERM,
           "io_uring_setup": errno.ENOSYS, "io_uring_enter": errno.ENOSYS, "io_uring_register": errno.ENOSYS,
           "unshare": errno.EPERM, "setns": errno.EPERM, "clone3": errno.ENOSYS,
           "sendfile": errno.ENOSYS, "splice": errno.ENOSYS, "tee": errno.ENOSYS, "vmsplice": errno.ENOSYS}
_ARCHES = {  # AUDIT_ARCH_*, and the calls' numbers there
    "x86_64": (0xC000003E, {"fallocate": 285, "memfd_create": 319, "shmget": 29, "msgget": 68, "setpriority": 141,
                            "sched_setscheduler": 144, "sched_setattr": 314,
                            "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
                            "unshare": 272, "setns": 308, "clone3": 435, "sendfile": 40, "splice": 275, "tee": 276,
                            "vmsplice": 278, "clone": 56}),
    "aarch64": (0xC00000B7, {"fallocate": 47, "memfd_create": 279, "shmget": 194, "msgget": 186, "setpriority": 140,
                             "sched_setscheduler": 119, "sched_setattr": 274,
                             "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
                             "unshare": 97, "setns": 268, "clone3": 435, "sendfile": 71, "splice": 76, "tee": 77,
                             "vmsplice": 75, "clone": 220}),
}


def _op(code: int, k: int, true: int = 0, false: int = 0) -> bytes:
    return struct.pack("=HBBI", code, true, false, k)


def program(machine: str | None = None) -> bytes | None:
    """The filter for this machine's architecture (None where its numbers are not known here: no filter)."""
    known = _ARCHES.get(machine or os.uname().machine)  # not `platform`: 2 ms to import, on every grading
    if known is None:
        return None
    arch, numbers = known
    ops = [_op(_LOAD, 4), _op(_JEQ, arch, 1, 0), _op(_RETURN, _ERRNO | errno.ENOSYS),  # seccomp_data.arch
           _op(_LOAD, 0), _op(_JGE, _X32, 0, 1), _op(_RETURN, _ERRNO | errno.ENOSYS)]  # seccomp_data.nr
    for name, refused in REFUSED.items():
        ops += [_op(_JEQ, numbers[name], 0, 1), _op(_RETURN, _ERRNO | refused)]
    ops += [_op(_JEQ, numbers["clone"], 0, 3), _op(_LOAD, _FIRST_ARGUMENT),  # last: the accumulator holds the flags now
            _op(_JSET, _NEW_NAMESPACES, 0, 1), _op(_RETURN, _ERRNO | errno.EPERM)]
    return b"".join(ops + [_op(_RETURN, _ALLOW)])


def readable(filter_bytes: bytes) -> int:
    """A pipe's read end holding the filter, for bwrap to read to its end (the caller closes it after the start)."""
    read, write = os.pipe()
    os.write(write, filter_bytes)  # a few hundred bytes: far below a pipe's buffer
    os.close(write)
    return read
