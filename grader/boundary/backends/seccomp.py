"""The calls the bwrap side may make: an allow-list, built with libseccomp and handed to bwrap (`--seccomp FD`).

Modelled on the default profile container engines publish (what an unprivileged program needs, nothing that asks
for a capability), narrowed to what Python, git, ripgrep, uvicorn and pytest use. Any other call fails with ENOSYS,
as on a kernel without it, so a program falls back where it can (glibc from clone3 to clone).

Refused with an errno of their own, each because it lets code hold disk or memory the grader's looks cannot count,
hide a loop behind a busy machine, or reach past the sandbox: `fallocate` reserves gigabytes in one call past the
128 MiB file-size limit (EOPNOTSUPP: glibc's `posix_fallocate` then writes the file, bounded); `memfd_create`, SysV
`shmget` and `msgget` hold memory no process maps; lowering one's own priority (`setpriority`, `sched_setscheduler`,
`sched_setattr`, `ioprio_set`) makes a loop wait in the run queue, which the clock counts as the machine's fault
(`nice` warns and runs the command anyway); io_uring would make the same calls where no filter sees them. New
namespaces (`unshare`, `setns`, `clone` with a CLONE_NEW* flag) would give the code a user namespace of its own and
in it a tmpfs no size bounds; `clone3` hides its flags in memory a filter cannot read. `sendfile`, `splice`, `tee`
and `vmsplice` queue a file's cached pages by reference (1.3 GB in 322 loopback connections, neither droppable nor
seen); Python's `shutil` and `socket.sendfile` copy through read and write instead. `keyctl`, `add_key` and
`request_key` would reach the kernel's keyrings, which are no namespace's: student code read a key from the
instructor's session keyring. `socket` with AF_VSOCK talks to the virtual machine's host past every namespace.
Another architecture's calls (x32, i386 on x86_64) are refused whole.
"""
from __future__ import annotations

import errno
import functools
import os

from grader.boundary.backends import libseccomp

ALLOWED = (
    # files and folders
    "read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "preadv2", "pwritev", "pwritev2", "open",
    "openat", "openat2", "creat", "close", "close_range", "lseek", "_llseek", "dup", "dup2", "dup3", "fcntl", "fcntl64",
    "flock", "fsync", "fdatasync", "sync", "syncfs", "sync_file_range", "truncate", "truncate64", "ftruncate",
    "ftruncate64", "stat", "stat64", "lstat", "lstat64", "fstat", "fstat64", "newfstatat", "fstatat64", "statx",
    "statfs", "statfs64", "fstatfs", "fstatfs64", "access", "faccessat", "faccessat2", "readlink", "readlinkat",
    "getdents", "getdents64", "getcwd", "chdir", "fchdir", "mkdir", "mkdirat", "rmdir", "rename", "renameat",
    "renameat2", "link", "linkat", "symlink", "symlinkat", "unlink", "unlinkat", "chmod", "fchmod", "fchmodat",
    "fchmodat2", "chown", "fchown", "lchown", "fchownat", "chown32", "fchown32", "lchown32", "umask", "utime", "utimes",
    "utimensat", "utimensat_time64", "futimesat", "mknod", "mknodat", "getxattr", "lgetxattr", "fgetxattr",
    "listxattr", "llistxattr", "flistxattr", "setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr",
    "fremovexattr", "copy_file_range", "fadvise64", "fadvise64_64", "readahead", "inotify_init", "inotify_init1",
    "inotify_add_watch", "inotify_rm_watch", "ioctl",
    # memory
    "brk", "mmap", "mmap2", "munmap", "mremap", "mprotect", "madvise", "mincore", "msync", "mlock", "mlock2",
    "munlock", "mlockall", "munlockall", "membarrier", "pkey_alloc", "pkey_free", "pkey_mprotect", "map_shadow_stack",
    # processes and threads (clone: below, without namespace flags)
    "fork", "vfork", "execve", "execveat", "exit", "exit_group", "wait4", "waitid", "waitpid", "getpid", "getppid",
    "gettid", "getpgid", "setpgid", "getpgrp", "getsid", "setsid", "prctl", "arch_prctl", "set_tid_address",
    "set_robust_list", "get_robust_list", "rseq", "futex", "futex_time64", "futex_waitv", "set_thread_area",
    "get_thread_area", "capget", "capset", "getrlimit", "setrlimit", "prlimit64", "ugetrlimit", "getrusage", "times",
    "uname", "sysinfo", "getcpu", "getrandom", "restart_syscall", "seccomp", "pidfd_open", "pidfd_send_signal",
    "kill", "tkill", "tgkill", "sched_yield", "sched_getaffinity", "sched_setaffinity", "sched_getparam",
    "sched_setparam", "sched_getscheduler", "sched_getattr", "sched_get_priority_max", "sched_get_priority_min",
    "sched_rr_get_interval", "sched_rr_get_interval_time64", "getpriority", "ioprio_get",
    # identity (the side has no capability: it can only give up what it has)
    "getuid", "geteuid", "getgid", "getegid", "getresuid", "getresgid", "getgroups", "getuid32", "geteuid32",
    "getgid32", "getegid32", "getresuid32", "getresgid32", "getgroups32", "setuid", "setgid", "setreuid", "setregid",
    "setresuid", "setresgid", "setgroups", "setfsuid", "setfsgid", "setuid32", "setgid32", "setreuid32",
    "setregid32", "setresuid32", "setresgid32", "setgroups32", "setfsuid32", "setfsgid32",
    # signals
    "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "sigreturn", "rt_sigpending", "rt_sigsuspend",
    "rt_sigtimedwait", "rt_sigtimedwait_time64", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "sigaltstack", "signalfd",
    "signalfd4", "sigprocmask", "pause", "alarm",
    # time
    "clock_gettime", "clock_gettime64", "clock_getres", "clock_getres_time64", "clock_nanosleep",
    "clock_nanosleep_time64", "nanosleep", "gettimeofday", "time", "getitimer", "setitimer", "timer_create",
    "timer_delete", "timer_getoverrun", "timer_gettime", "timer_gettime64", "timer_settime", "timer_settime64",
    "timerfd_create", "timerfd_gettime", "timerfd_gettime64", "timerfd_settime", "timerfd_settime64",
    # waiting on many descriptors, pipes
    "poll", "ppoll", "ppoll_time64", "select", "_newselect", "pselect6", "pselect6_time64", "epoll_create",
    "epoll_create1", "epoll_ctl", "epoll_wait", "epoll_pwait", "epoll_pwait2", "eventfd", "eventfd2", "pipe", "pipe2",
    # sockets (socket itself: below, any family but AF_VSOCK); the network namespace has only its own loopback
    "socketpair", "bind", "listen", "accept", "accept4", "connect", "getsockname", "getpeername", "getsockopt",
    "setsockopt", "sendto", "recvfrom", "sendmsg", "recvmsg", "sendmmsg", "recvmmsg", "recvmmsg_time64", "shutdown",
    "send", "recv",
)
REFUSED = {"fallocate": errno.EOPNOTSUPP, "memfd_create": errno.ENOSYS, "shmget": errno.ENOSYS, "msgget": errno.ENOSYS,
           "setpriority": errno.EPERM, "sched_setscheduler": errno.EPERM, "sched_setattr": errno.EPERM,
           "ioprio_set": errno.EPERM, "io_uring_setup": errno.ENOSYS, "io_uring_enter": errno.ENOSYS,
           "io_uring_register": errno.ENOSYS, "unshare": errno.EPERM, "setns": errno.EPERM, "clone3": errno.ENOSYS,
           "sendfile": errno.ENOSYS, "splice": errno.ENOSYS, "tee": errno.ENOSYS, "vmsplice": errno.ENOSYS,
           "keyctl": errno.EPERM, "add_key": errno.EPERM, "request_key": errno.EPERM}
NEW_NAMESPACES = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)  # CLONE_NEWNS,
# NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET (NEWTIME is an exit-signal bit in clone's flags)
AF_VSOCK = 40
PERSONALITY = (0, 0xFFFFFFFF)  # PER_LINUX, and the query: nothing that turns address randomisation off


def why_not() -> str | None:
    """None where filters can be built here; else how to install what builds them."""
    return None if libseccomp.library() else libseccomp.INSTALL


@functools.cache
def program(machine: str | None = None) -> bytes | None:
    """The filter for this machine's architecture, or another's (None where libseccomp knows no such architecture)."""
    if libseccomp.library() is None:
        return None
    machine = machine or os.uname().machine  # not `platform`: 2 ms to import, on every grading
    arch = libseccomp.arch_token(machine)
    if not arch:
        return None
    built = libseccomp.Filter(arch, default=libseccomp.errno_action(errno.ENOSYS), badarch=libseccomp.errno_action(errno.ENOSYS))
    try:
        allow = libseccomp.ALLOW
        for name in ALLOWED:
            built.rule(allow, name)
        for name, refused in REFUSED.items():
            built.rule(libseccomp.errno_action(refused), name)
        flags = 1 if machine in ("s390", "s390x") else 0  # clone's flags come second there
        mask = sum(NEW_NAMESPACES)
        built.rule(allow, "clone", (flags, libseccomp.MASKED_EQ, mask, 0))
        for flag in NEW_NAMESPACES:
            built.rule(libseccomp.errno_action(errno.EPERM), "clone", (flags, libseccomp.MASKED_EQ, flag, flag))
        built.rule(allow, "socket", (0, libseccomp.NE, AF_VSOCK, 0))
        for persona in PERSONALITY:
            built.rule(allow, "personality", (0, libseccomp.EQ, persona, 0))
        return built.export()
    finally:
        built.close()


def readable(filter_bytes: bytes) -> int:
    """A pipe's read end holding the filter, for bwrap to read to its end (the caller closes it after the start)."""
    read, write = os.pipe()
    os.write(write, filter_bytes)  # a few kilobytes: below a pipe's buffer
    os.close(write)
    return read
