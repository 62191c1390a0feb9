"""macOS: the student's side under `sandbox-exec` with a generated Seatbelt profile.

The profile starts from `(deny default)`, as Claude Code's sandbox runtime does, and allows only what a Python run
needs: forking and running programs, signals and process information within its own sandbox, a named list of mach
services (directory lookups, logging, notifications; never the keychain's securityd, never the pasteboard), the
sysctls Python and psutil read (never kern.procargs2, which holds another process's environment), reads of the
system, the Python environment, the kit, the workspace and the run folder, writes in the run folder alone (and
/dev/null), and no network at all. Paths are handed to the profile as parameters (-D), never pasted into its text,
so no path can change its meaning.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

from grader.boundary.backends.process import Processes
from grader.boundary.backends.paths import needed_paths
from grader.boundary.runfolder import RunFolder

SANDBOX_EXEC = "/usr/bin/sandbox-exec"
MACH_SERVICES = ("com.apple.system.opendirectoryd.libinfo", "com.apple.system.opendirectoryd.membership",
                 "com.apple.system.logger", "com.apple.logd", "com.apple.system.notification_center",
                 "com.apple.bsd.dirhelper", "com.apple.coreservices.launchservicesd", "com.apple.lsd.mapdb")
SYSCTLS = ("hw.activecpu", "hw.byteorder", "hw.cachelinesize", "hw.cpufamily", "hw.cputype", "hw.logicalcpu",
           "hw.logicalcpu_max", "hw.machine", "hw.memsize", "hw.model", "hw.ncpu", "hw.pagesize", "hw.physicalcpu",
           "hw.physicalcpu_max", "kern.argmax", "kern.boottime", "kern.hostname", "kern.maxfiles",
           "kern.maxfilesperproc", "kern.maxproc", "kern.ngroups", "kern.osproductversion", "kern.osrelease",
           "kern.ostype", "kern.osversion", "kern.usrstack64", "kern.version", "sysctl.proc_cputype", "vm.loadavg")
SYSCTL_PREFIXES = ("hw.optional.", "hw.perflevel", "machdep.cpu.")
SYSTEM_READS = ("/usr", "/bin", "/sbin", "/System", "/Library", "/private/etc", "/private/var/db/timezone",
                "/private/var/db/dyld", "/opt/homebrew", "/usr/local", "/Applications/Xcode.app/Contents/Developer",
                "/dev/fd")
SYSTEM_LINKS = ("/", "/etc", "/tmp", "/var", "/private", "/private/var", "/private/var/db", "/Applications", "/opt",
                "/dev", "/dev/null", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/dtracehelper")
DEVICE_WRITES = ("/dev/null", "/dev/dtracehelper")


def why_not() -> str | None:
    if sys.platform != "darwin":
        return "sandbox-exec (Seatbelt) is macOS only"
    if not shutil.which(SANDBOX_EXEC):
        return f"{SANDBOX_EXEC} is missing: it ships with macOS; use the dev container instead"
    return None


def _quoted(names: tuple[str, ...], kind: str) -> str:
    return "".join(f'\n  ({kind} "{name}")' for name in names)


def profile(readable: int) -> str:
    """The profile text; parameters RUN and READ_0..READ_{readable-1} are given with -D."""
    reads = "".join(f'\n  (subpath (param "READ_{n}"))' for n in range(readable))
    return f"""(version 1)
(deny default)

; processes: fork and run programs; signals and process information only within this sandbox
(allow process-fork)
(allow process-exec)
(allow signal (target same-sandbox))
(allow process-info* (target same-sandbox))

; mach services by name: directory lookups, logging, notifications (no keychain, no pasteboard)
(allow mach-lookup{_quoted(MACH_SERVICES, "global-name")})

; the machine's figures Python and psutil read
(allow sysctl-read{_quoted(SYSCTLS, "sysctl-name")}{_quoted(SYSCTL_PREFIXES, "sysctl-name-prefix")})

; POSIX shared memory and semaphores (multiprocessing), pipes and descriptors handed over already
(allow ipc-posix-shm)
(allow ipc-posix-sem)

; reads: the system, the Python environment, the kit, the workspace, the run folder; folders' metadata on the way
(allow file-read*{_quoted(SYSTEM_READS, "subpath")}{_quoted(SYSTEM_LINKS, "literal")}
  (subpath (param "RUN")){reads})
(allow file-read-metadata (vnode-type DIRECTORY))
(allow file-ioctl{_quoted(DEVICE_WRITES, "literal")})

; writes: the run folder alone, and /dev/null
(allow file-write*
  (subpath (param "RUN")){_quoted(DEVICE_WRITES, "literal")})

; no network: nothing of network* is allowed above
"""


def command(inner: list[str], run: Path, readable: list[Path]) -> list[str]:
    params = ["-D", f"RUN={run}"]
    for number, path in enumerate(readable):
        params += ["-D", f"READ_{number}={path}"]
    return [SANDBOX_EXEC, "-p", profile(len(readable)), *params, *inner]


class Seatbelt(Processes):
    name = "seatbelt"

    def wrap(self, inner: list[str], folder: RunFolder, workspace: Path, cwd: Path) -> list[str]:
        return command(inner, folder.path, [*needed_paths(), workspace])
