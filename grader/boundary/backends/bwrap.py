"""Linux: the student's side inside bubblewrap (`bwrap`), started once per run.

New user, PID, IPC, UTS, network (and, where allowed, cgroup) namespaces: no network at all, and no process of
the grader's in view. An unprivileged uid inside (65534), which is never the host's root: where the grader is root,
bwrap sets the sandbox up as root in a user namespace whose map we write (0 to 0, 65534 to a host uid
of the grader's own, identity.side_id()), and `setpriv` drops the side to 65534 before anything else runs (grader.boundary.backends.identity). /proc/sys is read-only, and
the shadow files are masked. A fresh session keyring for every start, and a seccomp allow-list
(grader.boundary.backends.seccomp). The system, the Python environment and the kit
read-only, the workspace read-only, the run folder the only writable place (bound at its own path, so paths agree on
both sides), HOME inside it, the environment from an allow-list. /tmp and /dev/shm are the run folder's own tmp/ and
shm/, on disk and under its caps (grader.boundary.folder_caps), not a tmpfs: a tmpfs's files are memory no process is
charged for, and its hard links pin memory its size limit does not count (3 million of them held 1.1 GB). Nothing else of the disk (the
caller's home folder, its keys) is there at all. `--die-with-parent` ends the side if the grader dies; a small
janitor outside then removes the run folder.

Process ids inside are the namespace's own: `host_pid` finds a process by the last number of its NSpid line.
"""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from grader.boundary import processes
from grader.boundary.backends import identity, seccomp
from grader.boundary.backends.paths import SYSTEM, links_on_the_way, needed_paths
from grader.boundary.backends.process import Processes
from grader.boundary.runfolder import MARK, RunFolder

NAMESPACES = ("--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net", "--unshare-cgroup-try")
NOBODY = str(identity.INSIDE)
HIDDEN = ("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/sudoers")  # masked whoever the side is
READ_ONLY_PROC = ("/proc/sys", "/proc/bus", "/proc/fs", "/proc/irq")  # the kernel's knobs: never written from inside
ROOT_MAP = "0 0 1\n{inside} {outside} 1\n"  # as root: bwrap sets up as the host's root, the side is identity.side_id() there
DROP = ("--reuid", NOBODY, "--regid", NOBODY, "--clear-groups", "--")  # setpriv's, before the side's first command
INSTALL = "bubblewrap is not installed: sudo apt-get install bubblewrap (Fedora: sudo dnf install bubblewrap)"
JANITOR = ("import os, sys, time\nif not os.read(0, 1):  # EOF without a word: the grader died\n"
           "    time.sleep(0.2); from grader.boundary.runfolder import remove_tree; remove_tree(sys.argv[1])")


@functools.cache
def why_not() -> str | None:
    """None where bwrap can start a sandbox here; else one line saying what is missing (probed once a process)."""
    exe = shutil.which("bwrap")
    if not exe:
        return INSTALL
    if seccomp.why_not():
        return seccomp.why_not()
    if identity.grader_is_root() and not shutil.which("setpriv"):
        return "setpriv is missing (grading as root needs it to drop the student's side to an unprivileged uid): install util-linux"
    try:
        probe = subprocess.run([exe, *NAMESPACES, "--ro-bind", "/", "/", "--", "true"], capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as failure:
        return f"bubblewrap would not start ({failure})"
    if probe.returncode != 0:
        said = (probe.stderr.decode(errors="replace").strip().splitlines() or ["no reason given"])[-1]
        return (f"bubblewrap cannot create namespaces here ({said}): unprivileged user namespaces are off or restricted "
                "(on Ubuntu 23.10+ allow them for bwrap with an AppArmor profile)")
    return None


def arguments(folder: RunFolder, workspace: Path, cwd: Path) -> list[str]:
    """bwrap's arguments before the command: the namespaces, the uid, the mounts."""
    user = ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"] if identity.grader_is_root() else ["--uid", NOBODY, "--gid", NOBODY]
    args = ["bwrap", *NAMESPACES, *user, "--die-with-parent", "--new-session",
            "--dev", "/dev", "--bind", str(folder.shm), "/dev/shm", "--remount-ro", "/dev", "--proc", "/proc",
            *[arg for name in READ_ONLY_PROC if Path(name).is_dir() for arg in ("--ro-bind", name, name)],
            "--bind", str(folder.tmp), "/tmp"]  # before the run folder's own bind: it may lie under /tmp
    for name in SYSTEM:
        path = Path(name)
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), name]
        elif path.is_dir():
            args += ["--ro-bind", name, name]
    args += [arg for hidden in HIDDEN if Path(hidden).exists() for arg in ("--ro-bind", "/dev/null", hidden)]
    bound = [Path(name) for name in SYSTEM if Path(name).is_dir()]
    for path in needed_paths():
        if not any(path == folder or folder in path.parents for folder in bound):
            args += [*_way_to(path, bound), "--ro-bind", str(path), str(path)]
            bound.append(path)
    for link, target in links_on_the_way():
        real = link.parent.resolve()
        if not any(real == folder or folder in real.parents for folder in bound):  # a link in a bound folder is there already
            args += [*_way_to(link, bound), "--symlink", target, str(link)]
    args += [*_way_to(workspace, bound), "--ro-bind", str(workspace), str(workspace),
             *_way_to(folder.path, bound), "--bind", str(folder.path), str(folder.path), "--chdir", str(cwd)]
    return args


def _way_to(path: Path, bound: list[Path]) -> list[str]:
    """As root, the folders bwrap makes on the way to a mount, made 0755 first: bwrap copies the host's modes, and a
    root-only 0700 parent (pytest's, a root home) would shut the side's 65534 out of what lies below it."""
    if not identity.grader_is_root():
        return []
    way = [parent for parent in reversed(path.parents) if parent != Path("/") and parent not in bound
           and not any(folder in parent.parents for folder in bound)]
    return [arg for parent in way for arg in ("--perms", "0755", "--dir", str(parent))]


class Bwrap(Processes):
    name = "bwrap"
    first_pid = 2  # bwrap's own init is 1 in the namespace; the command it starts is 2

    def __init__(self) -> None:  # no subreaper, no sweep by mark: the namespace holds every process of the side
        self.popen, self.token = None, ""
        self._rules: int | None = None  # the seccomp filter's pipe, while bwrap starts (grader.boundary.backends.seccomp)
        self._mapping: tuple[int, int] | None = None  # as root, while bwrap starts: its block and info pipes' ends
        self._janitor: subprocess.Popen | None = None
        self._known: dict[int, int] = {}

    def start(self, command: list[str], folder: RunFolder, workspace: Path, pass_fds: tuple[int, ...], cwd: Path):
        rules = seccomp.program()
        self._rules = seccomp.readable(rules) if rules else None
        theirs = [self._rules] if self._rules is not None else []  # bwrap's copies: ours closed once it started
        ours: list[int] = []
        if identity.grader_is_root():
            (block, release), (info, said) = os.pipe(), os.pipe()
            self._mapping = (block, said)
            theirs, ours = theirs + [block, said], [release, info]
        try:
            try:
                started = identity.in_fresh_keyring(lambda: super(Bwrap, self).start(command, folder, workspace, (*pass_fds, *theirs), cwd))
            finally:
                for fd in theirs:
                    os.close(fd)
                self._rules = self._mapping = None
            if ours:
                _map_user(*ours)
        finally:
            for fd in ours:
                os.close(fd)
        return started

    def wrap(self, command: list[str], folder: RunFolder, workspace: Path, cwd: Path) -> list[str]:
        self._watch(folder)
        rules = ["--seccomp", str(self._rules)] if self._rules is not None else []
        if self._mapping:  # bwrap waits on the first until the map is written; it tells its child's pid on the second
            rules += ["--userns-block-fd", str(self._mapping[0]), "--info-fd", str(self._mapping[1])]
            command = [shutil.which("setpriv") or "setpriv", *DROP, *command]
        return [shutil.which("bwrap") or "bwrap", *arguments(folder, workspace, cwd)[1:], *rules, "--", *command]

    def host_pid(self, pid: int) -> int | None:
        if pid not in self._known:
            mapped = set(self._known.values())
            for proc in self.processes():
                if proc.pid in mapped:  # known already: its status file is not read again
                    continue
                inner = _inner_pid(proc.pid)
                if inner is not None:
                    self._known[inner] = proc.pid
        return self._known.get(pid)

    def end(self) -> None:
        """Killing the namespace's first process ends every process in it, whatever it did."""
        if self.popen:
            early = self.popen.poll() is not None  # killed during the run (a fork bomb's sweep): the rest may be dying still
            killed = processes.kill_tree([self.popen.pid])
            self.popen.wait()
            if early and self.token:
                killed += [proc for proc in map(processes.process, processes.marked(MARK, self.token)) if proc]
            processes.gone(killed)  # the run ends once the namespace is empty
        if self._janitor:
            try:
                self._janitor.stdin.write(b"q")  # a planned end: the runner removes the folder itself
                self._janitor.stdin.close()
            except OSError:
                pass
            self._janitor.wait()
            self._janitor = None

    def _watch(self, folder: RunFolder) -> None:
        """A small process outside the sandbox that removes the run folder if the grader dies without doing so."""
        import grader

        self._janitor = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", f"import sys; sys.path.insert(0, {str(Path(grader.__file__).parent.parent)!r}); " + JANITOR,
             str(folder.path)],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={}, start_new_session=True)


def _map_user(release: int, info: int) -> None:
    """Write the side's user namespace map (0 to itself, 65534 to the side's host uid), let bwrap go on, and read what it says to
    the end (a pipe left unread would end bwrap by SIGPIPE)."""
    said = b""
    while not (found := re.search(rb'"child-pid"\s*:\s*(\d+)', said)):
        chunk = os.read(info, 4096)
        if not chunk:  # bwrap ended before making its namespace: its stderr says why
            return
        said += chunk
    for name in ("uid_map", "gid_map"):
        with open(f"/proc/{int(found.group(1))}/{name}", "w") as mapping:
            mapping.write(ROOT_MAP.format(inside=NOBODY, outside=identity.side_id()))
    os.write(release, b"1")
    while os.read(info, 4096):
        pass


def _inner_pid(pid: int) -> int | None:
    """The pid a process has in its own (innermost) PID namespace, from /proc/PID/status's NSpid line."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("NSpid:"):
                return int(line.split()[-1])
    except (OSError, ValueError):
        pass
    return None
