"""The bwrap side's seccomp allow-list, built by libseccomp for x86_64 and for arm64 (whatever this machine is) and run
through a small classic-BPF interpreter: the calls a program needs are allowed, the refused ones fail with their
own errno, and any other call fails with ENOSYS."""
from __future__ import annotations

import errno
import struct

import pytest

from grader.boundary.backends import seccomp

# The calls' numbers, from each architecture's own table (arch/x86/entry/syscalls/syscall_64.tbl; arm64 uses
# include/uapi/asm-generic/unistd.h), written out here apart from the filter's own table.
NUMBERS = {
    "x86_64": {"read": 0, "write": 1, "openat": 257, "mmap": 9, "sendto": 44, "clone": 56, "fallocate": 285,
               "memfd_create": 319, "shmget": 29, "msgget": 68, "setpriority": 141, "sched_setscheduler": 144, "sched_setattr": 314,
               "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "unshare": 272, "setns": 308,
               "clone3": 435, "sendfile": 40, "splice": 275, "tee": 276, "vmsplice": 278, "copy_file_range": 326,
               "keyctl": 250, "add_key": 248, "request_key": 249, "ioprio_set": 251, "socket": 41, "ptrace": 101,
               "mount": 165, "bpf": 321, "mq_open": 240, "execve": 59, "wait4": 61, "getrandom": 318, "futex": 202},
    "aarch64": {"read": 63, "write": 64, "openat": 56, "mmap": 222, "sendto": 206, "clone": 220, "fallocate": 47,
                "memfd_create": 279, "shmget": 194, "msgget": 186, "setpriority": 140, "sched_setscheduler": 119, "sched_setattr": 274,
                "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "unshare": 97, "setns": 268,
                "clone3": 435, "sendfile": 71, "splice": 76, "tee": 77, "vmsplice": 75, "copy_file_range": 285,
                "keyctl": 219, "add_key": 217, "request_key": 218, "ioprio_set": 30, "socket": 198, "ptrace": 117,
                "mount": 40, "bpf": 280, "mq_open": 180, "execve": 221, "wait4": 260, "getrandom": 278, "futex": 98},
}
AT_FDCWD = (1 << 64) - 100
ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
SIGCHLD, CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWNET, CLONE_THREAD_FLAGS = 17, 0x10000000, 0x00020000, 0x40000000, 0x003D0F00
AF_UNIX, AF_INET, AF_VSOCK = 1, 2, 40


def run(program: bytes, arch: int, number: int, first: int = 0) -> int:
    """What the filter returns for this call: classic BPF over struct seccomp_data (nr, arch, ip, args[6])."""
    data = struct.pack("=iIQ6Q", number, arch, 0, first % (1 << 64), 0, 0, 0, 0, 0)
    ops = [struct.unpack("=HBBI", program[at:at + 8]) for at in range(0, len(program), 8)]
    accumulator, pc = 0, 0
    while True:
        code, true, false, k = ops[pc]
        if code == 0x20:  # BPF_LD|BPF_W|BPF_ABS
            accumulator = struct.unpack_from("=I", data, k)[0]
        elif code == 0x06:  # BPF_RET|BPF_K
            return k
        elif code == 0x54:  # BPF_ALU|BPF_AND|BPF_K
            accumulator &= k
        elif code in (0x15, 0x25, 0x35, 0x45):  # BPF_JMP with JEQ, JGT, JGE, JSET
            taken = {0x15: accumulator == k, 0x25: accumulator > k, 0x35: accumulator >= k, 0x45: bool(accumulator & k)}[code]
            pc += true if taken else false
        elif code == 0x05:  # BPF_JMP|BPF_JA
            pc += k
        else:
            raise AssertionError(f"an instruction this interpreter does not know: {code:#x}")
        pc += 1


ALLOW = 0x7FFF0000


def refused(errno_value: int) -> int:
    return 0x00050000 | errno_value


@pytest.mark.parametrize("machine", sorted(NUMBERS))
def test_the_filter_allows_what_programs_need_and_refuses_the_rest(machine):
    program, numbers, arch = seccomp.program(machine), NUMBERS[machine], ARCH[machine]
    for name in ("read", "write", "mmap", "sendto", "copy_file_range", "execve", "wait4", "getrandom", "futex"):
        assert run(program, arch, numbers[name]) == ALLOW, name
    assert run(program, arch, numbers["openat"], AT_FDCWD) == ALLOW, "openat(AT_FDCWD, ...): every open"
    for name, error in seccomp.REFUSED.items():
        assert run(program, arch, numbers[name]) == refused(error), name
    for name in ("ptrace", "mount", "bpf", "mq_open"):  # on no list: as on a kernel without them
        assert run(program, arch, numbers[name]) == refused(errno.ENOSYS), name
    assert run(program, arch, numbers["clone"], SIGCHLD) == ALLOW, "fork"
    assert run(program, arch, numbers["clone"], CLONE_THREAD_FLAGS) == ALLOW, "a thread"
    for flags in (CLONE_NEWUSER | SIGCHLD, CLONE_NEWNS | SIGCHLD, CLONE_NEWNET | CLONE_THREAD_FLAGS):
        assert run(program, arch, numbers["clone"], flags) == refused(errno.EPERM), hex(flags)
    assert run(program, arch, numbers["socket"], AF_UNIX) == run(program, arch, numbers["socket"], AF_INET) == ALLOW
    assert run(program, arch, numbers["socket"], AF_VSOCK) == refused(errno.ENOSYS), "vsock reaches the VM's host"
    assert run(program, 0x40000003, numbers["read"]) == refused(errno.ENOSYS), "another architecture's calls"


def test_the_keyring_calls_are_refused():
    assert {name: seccomp.REFUSED[name] for name in ("keyctl", "add_key", "request_key")} == dict.fromkeys(
        ("keyctl", "add_key", "request_key"), errno.EPERM)


def test_x32_calls_are_refused_whole():
    assert run(seccomp.program("x86_64"), ARCH["x86_64"], 0x40000000 | 0) == refused(errno.ENOSYS)


def test_a_machine_libseccomp_does_not_know_gets_no_filter():
    assert seccomp.program("pdp11") is None
