"""Linux's own figures, read from /proc where psutil has no call for them: memory a process holds including shared
anonymous pages (PSS), and how long its threads waited in a run queue for a CPU. Elsewhere each says None."""
from __future__ import annotations

import os


def held_memory(pid: int) -> int | None:
    """Linux: anonymous and shared-anonymous memory (bytes), from /proc/PID/smaps_rollup (Pss_Anon + Pss_Shmem) or,
    on an older kernel, /proc/PID/status (RssAnon + RssShmem); None elsewhere."""
    for name, keys in (("smaps_rollup", ("Pss_Anon:", "Pss_Shmem:")), ("status", ("RssAnon:", "RssShmem:"))):
        try:
            with open(f"/proc/{pid}/{name}", "rb") as source:
                text = source.read().decode("ascii", "replace")
        except OSError:
            continue
        found = [int(line.split()[1]) << 10 for line in text.splitlines() if line.startswith(keys)]
        if len(found) == 2:
            return sum(found)
    return None


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
