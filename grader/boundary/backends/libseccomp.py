"""The few calls of the system's libseccomp (libseccomp.so.2) that build a filter and export it as classic BPF.

ctypes over the shared library, so no new dependency: the library knows every architecture's system call numbers
(our own table knew two), and it can build a filter for another architecture than this machine's (the tests build
arm64's on x86_64 and run both through a BPF interpreter). Debian and Ubuntu ship it with apt itself; Fedora with
systemd. Nothing here is loaded until a filter is built.
"""
from __future__ import annotations

import ctypes
import functools
import os

ALLOW = 0x7FFF0000
INSTALL = "libseccomp is not installed: sudo apt-get install libseccomp2 (Fedora: sudo dnf install libseccomp)"
MASKED_EQ, EQ, NE = 7, 4, 1  # enum scmp_compare
_DEFAULT_ACTION, _BADARCH_ACTION, _OPTIMIZE = 1, 2, 8  # enum scmp_filter_attr
NATIVE = 0


def errno_action(number: int) -> int:
    """SCMP_ACT_ERRNO(number): the call fails with this errno, as if the kernel had said so."""
    return 0x00050000 | (number & 0xFFFF)


class Compare(ctypes.Structure):
    """struct scmp_arg_cmp: argument `arg` compared with `op` against a (masked by b with MASKED_EQ)."""
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("a", ctypes.c_uint64), ("b", ctypes.c_uint64)]


@functools.cache
def library() -> ctypes.CDLL | None:
    """The loaded library with its signatures, or None where it is not installed."""
    try:
        lib = ctypes.CDLL("libseccomp.so.2", use_errno=True)
    except OSError:  # find_library runs ldconfig (150 ms): only where the usual name is not found
        from ctypes.util import find_library

        name = find_library("seccomp")
        try:
            lib = ctypes.CDLL(name, use_errno=True) if name else None
        except OSError:
            lib = None
        if lib is None:
            return None
    lib.seccomp_init.restype, lib.seccomp_init.argtypes = ctypes.c_void_p, [ctypes.c_uint32]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    lib.seccomp_arch_resolve_name.restype, lib.seccomp_arch_resolve_name.argtypes = ctypes.c_uint32, [ctypes.c_char_p]
    lib.seccomp_arch_native.restype = ctypes.c_uint32
    lib.seccomp_arch_add.argtypes = lib.seccomp_arch_remove.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
    lib.seccomp_attr_set.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint,
                                           ctypes.POINTER(Compare)]
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    return lib


def arch_token(machine: str) -> int:
    """libseccomp's token (the kernel's AUDIT_ARCH_*) for `os.uname().machine`'s name; 0 where it knows none."""
    lib = library()
    name = {"armv7l": "arm", "armv8l": "arm", "i686": "x86", "i386": "x86", "amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
    return lib.seccomp_arch_resolve_name(name.encode()) if lib else 0


class Filter:
    """One filter for one architecture: rules by system call name, exported as the BPF program the kernel runs."""

    def __init__(self, arch: int, default: int, badarch: int):
        self.lib, self.default = library(), default
        self.ctx = self.lib.seccomp_init(default)
        if not self.ctx:
            raise OSError("seccomp_init failed")
        self._check(self.lib.seccomp_attr_set(self.ctx, _BADARCH_ACTION, badarch), "badarch action")
        self.lib.seccomp_attr_set(self.ctx, _OPTIMIZE, 2)  # a binary tree of numbers, not a list: fewer steps a call
        if arch != self.lib.seccomp_arch_native():  # another machine's filter: its architecture in place of ours
            self._check(self.lib.seccomp_arch_add(self.ctx, arch), "arch_add")
            self._check(self.lib.seccomp_arch_remove(self.ctx, NATIVE), "arch_remove")

    def rule(self, action: int, name: str, *compares: tuple[int, int, int, int]) -> bool:
        """Add a rule for the call `name` (compares: (argument, op, a, b)); False where libseccomp knows no such call."""
        number = self.lib.seccomp_syscall_resolve_name(name.encode())
        if action == self.default and not compares:  # what any call not named gets already (libseccomp refuses it)
            return True
        if number == -1:  # __NR_SCMP_ERROR: a name this libseccomp does not know (a call newer than it)
            return False
        array = (Compare * max(1, len(compares)))(*(Compare(*compare) for compare in compares))
        self._check(self.lib.seccomp_rule_add_array(self.ctx, action, number, len(compares), array), f"rule for {name}")
        return True  # a call the architecture lacks (open on arm64) is skipped by libseccomp itself

    def export(self) -> bytes:
        read, write = os.pipe()
        try:
            self._check(self.lib.seccomp_export_bpf(self.ctx, write), "export_bpf")
            os.close(write)
            write = -1
            chunks = []
            while chunk := os.read(read, 1 << 16):
                chunks.append(chunk)
            return b"".join(chunks)
        finally:
            os.close(read)
            if write >= 0:
                os.close(write)

    def close(self) -> None:
        if self.ctx:
            self.lib.seccomp_release(self.ctx)
            self.ctx = None

    @staticmethod
    def _check(result: int, what: str) -> None:
        if result < 0:
            raise OSError(-result, f"libseccomp {what}: {os.strerror(-result)}")
