"""Linux's own figures, read from /proc where psutil has no call for them: memory a process holds including shared
anonymous pages (PSS), how long its threads waited in a run queue for a CPU, the deleted files they hold open, and
the machine's memory as the kernel counts it. Elsewhere each says None (or nothing)."""
from __future__ import annotations

import functools
import os


def held_memory(pid: int) -> int | None:
    """Linux: anonymous and shared-anonymous memory (bytes), from /proc/PID/smaps_rollup (Pss_Anon + Pss_Shmem) or,
    on an older kernel, /proc/PID/status (RssAnon + RssShmem); None elsewhere."""
    found = _kib_sum(pid, "smaps_rollup", ("Pss_Anon:", "Pss_Shmem:"))
    return found if found is not None else held_memory_ceiling(pid)


def held_memory_ceiling(pid: int) -> int | None:
    """Linux: a cheap bound from above on held_memory (RssAnon + RssShmem from /proc/PID/status: a kernel counter,
    about a tenth of the cost of smaps_rollup's walk of every mapping; a page's proportional share is never more
    than the page); None elsewhere."""
    return _kib_sum(pid, "status", ("RssAnon:", "RssShmem:"))


def _kib_sum(pid: int, name: str, keys: tuple[str, str]) -> int | None:
    """The two `keys` lines of /proc/PID/NAME (figures in kB) added up, in bytes; None if either is missing."""
    try:
        with open(f"/proc/{pid}/{name}", "rb") as source:
            text = source.read().decode("ascii", "replace")
    except OSError:
        return None
    found = [int(line.split()[1]) << 10 for line in text.splitlines() if line.startswith(keys)]
    return sum(found) if len(found) == 2 else None


def run_wait(procs: list) -> dict[int, float] | None:
    """Linux: for each process, the seconds its threads have spent waiting in a run queue for a CPU (the second field
    of /proc/PID/task/TID/schedstat, summed); None where the system does not say."""
    waits: dict[int, float] = {}
    for proc in procs:
        try:
            threads = os.listdir(f"/proc/{proc.pid}/task")
        except OSError:
            continue
        for thread in threads:
            try:
                with open(f"/proc/{proc.pid}/task/{thread}/schedstat", "rb") as source:
                    waits[proc.pid] = waits.get(proc.pid, 0.0) + int(source.read().split()[1]) / 1e9
            except (OSError, ValueError, IndexError):
                pass
    return waits if waits or not procs else None


def thread_wait() -> float | None:
    """Linux: the seconds the calling thread has spent waiting in a run queue for a CPU; None where the system does not say."""
    try:
        with open("/proc/thread-self/schedstat", "rb") as source:
            return int(source.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


def handle_path(handle: int) -> str:
    """The path of an open file descriptor (an O_PATH handle can be chmod-ed through it, never following a link)."""
    return f"/proc/self/fd/{handle}"


def open_deleted(pids: list[int], under: str) -> dict[tuple[int, int], int]:
    """Linux: the files under the folder `under` that these processes deleted but still hold open (they still fill the
    disk), as {(device, inode): allocated bytes}, from /proc/PID/fd; {} elsewhere or where we may not look."""
    import stat

    found: dict[tuple[int, int], int] = {}
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            link = f"/proc/{pid}/fd/{fd}"
            try:
                target = os.readlink(link)
                if not (target.endswith(" (deleted)") and target.startswith(under + "/")):
                    continue
                info = os.stat(link)
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                found[(info.st_dev, info.st_ino)] = info.st_blocks * 512
    return found


def child_pids(pid: int) -> list[int] | None:
    """Linux: the children of every thread of `pid`, from /proc/PID/task/TID/children: a look at this process alone,
    where psutil's children() reads the stat file of every process on the machine. [] if it is gone; None where the
    kernel does not say (not Linux, or built without CONFIG_PROC_CHILDREN)."""
    if not _children_files():
        return None
    found: list[int] = []
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for thread in threads:
        try:
            with open(f"/proc/{pid}/task/{thread}/children", "rb", buffering=0) as source:
                found += [int(number) for number in source.read(1 << 16).split()]  # one read: one consistent list
        except (OSError, ValueError):
            pass
    return found


PF_EXITING = 0x4  # a task's flag (the ninth field of /proc/PID/stat) from the moment it starts to exit
SIGKILL_BIT = 1 << 8  # SIGKILL (9) in the pending-signal masks of /proc/PID/status


def ending(pid: int) -> bool:
    """Linux: the kernel is already ending this process (a SIGKILL is pending, or it has begun to exit): it runs no
    more code of its own. False if it is not, if it is gone, and where the system does not say."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as source:
            stat = source.read()
        if int(stat[stat.rindex(b")") + 2:].split()[6]) & PF_EXITING:
            return True
        with open(f"/proc/{pid}/status", "rb") as source:
            status = source.read().decode("ascii", "replace")
    except (OSError, ValueError, IndexError):
        return False
    return any(line.startswith(("SigPnd:", "ShdPnd:")) and int(line.split()[1], 16) & SIGKILL_BIT
               for line in status.splitlines())


@functools.cache
def _children_files() -> bool:
    return os.path.exists(f"/proc/self/task/{os.getpid()}/children")


def lowered_on_linux(pid: int, ours: int) -> bool:
    """Did the process lower its priority where psutil does not look: a thread's nice or policy (SCHED_IDLE, SCHED_BATCH),
    or its autogroup's nice (/proc/PID/autogroup, which a process may write for itself)?"""
    if not hasattr(os, "sched_getscheduler"):
        return False
    theirs = _autogroup_nice(pid)
    if theirs is not None and theirs > max(0, _autogroup_nice(os.getpid()) or 0):
        return True
    try:
        threads = [int(name) for name in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return False
    polite = {os.SCHED_IDLE, os.SCHED_BATCH}
    for tid in threads:
        try:
            if os.getpriority(os.PRIO_PROCESS, tid) > ours or os.sched_getscheduler(tid) in polite:
                return True
        except OSError:
            pass
    return False


def _autogroup_nice(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/autogroup") as said:  # "/autogroup-N nice K"
            return int(said.read().split()[-1])
    except (OSError, ValueError, IndexError):
        return None


def meminfo() -> dict[str, int] | None:
    """Linux's /proc/meminfo in bytes, the per-CPU lists' free pages counted as free and available; None elsewhere (or
    where a figure grader.boundary.hidden_memory needs is missing)."""
    try:
        with open("/proc/meminfo", "rb") as source:
            text = source.read().decode("ascii", "replace")
    except OSError:
        return None
    figures = {}
    for line in text.splitlines():
        name, _, value = line.partition(":")
        parts = value.split()
        if parts and parts[0].isdigit():
            figures[name] = int(parts[0]) << 10
    needed = ("MemTotal", "MemFree", "MemAvailable", "Buffers", "Cached", "SReclaimable", "AnonPages")
    if not all(name in figures for name in needed):
        return None
    spare = _per_cpu_free()
    figures["MemFree"] += spare
    figures["MemAvailable"] += spare
    return figures


def _per_cpu_free() -> int:
    """Free pages the kernel keeps on per-CPU lists (/proc/zoneinfo's pagesets), which MemFree leaves out: a newer
    kernel tunes those lists to what was freed lately (1.1 GiB of 24 here), so without them a run that took its memory
    from them would seem to hold none, and one that gave some back to them, to hold it still."""
    try:
        with open("/proc/zoneinfo", "rb") as source:
            text = source.read().decode("ascii", "replace")
    except OSError:
        return 0
    pages = sum(int(line.split()[1]) for line in text.splitlines() if line.lstrip().startswith("count:"))
    return pages * os.sysconf("SC_PAGE_SIZE")


def oom_kills() -> int | None:
    """Linux: how many processes the kernel's out-of-memory killer has ended since boot (/proc/vmstat); None elsewhere."""
    try:
        with open("/proc/vmstat", "rb") as source:
            for line in source:
                if line.startswith(b"oom_kill "):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None
