"""The machine's witness of memory no process holds (grader.boundary.hidden_memory): socket and pipe buffers."""
from __future__ import annotations

import socket
import sys

import pytest

from grader.boundary import hidden_memory
from grader.boundary.clocks import Clock, HiddenMemory

GiB, MiB = 1 << 30, 1 << 20


def figures(held: int, available: int, total: int = 16 * GiB, shared: int = 100 * MiB) -> dict[str, int]:
    """A /proc/meminfo whose kernel-held memory is `held`, beside 2 GiB of processes, 3 GiB of cache and `shared`
    memory (tmpfs, MAP_SHARED: part of the cache)."""
    anon, cache = 2 * GiB, 3 * GiB
    return {"MemTotal": total, "MemFree": total - held - anon - cache - shared, "MemAvailable": available, "Buffers": 0,
            "Cached": cache + shared, "Shmem": shared, "SReclaimable": 0, "AnonPages": anon}


def test_memory_no_process_holds_stops_the_run_once_it_is_past_the_limits(monkeypatch):
    monkeypatch.setattr(hidden_memory, "FRESH", 0.0)  # every look reads the figures
    monkeypatch.setattr(hidden_memory, "meminfo", lambda: figures(held=1 * GiB, available=12 * GiB))
    witness = hidden_memory.MemoryWitness()
    clock = Clock(10).begin().watching(None, memory=witness)
    for held, available in ((1 * GiB + 900 * MiB, 12 * GiB),  # 900 MiB more: within HIDDEN
                            (3 * GiB, 10 * GiB),  # 2 GiB more, with room to spare: within CEILING
                            (1 * GiB + 900 * MiB, 1 * GiB)):  # the machine is low, but not for memory this run added
        monkeypatch.setattr(hidden_memory, "meminfo", lambda: figures(held, available))
        clock.last_look()
    # shared memory: a tree that maps it is charged for it (PSS), and every run beside it must not be stopped for it
    monkeypatch.setattr(hidden_memory, "meminfo", lambda: figures(held=1 * GiB, available=1 * GiB, shared=6 * GiB))
    clock.last_look()
    monkeypatch.setattr(hidden_memory, "meminfo", lambda: figures(held=3 * GiB, available=1 * GiB))
    with pytest.raises(HiddenMemory, match="grew by 2,048 MB during the run .allowed: 1,024 MB, with 1,024 MB left") as low:
        clock.last_look()
    monkeypatch.setattr(hidden_memory, "meminfo", lambda: figures(held=6 * GiB, available=9 * GiB))
    with pytest.raises(HiddenMemory, match="grew by 5,120 MB during the run .allowed: 4,096 MB") as any_machine:
        clock.last_look()
    assert low.value.shared and any_machine.value.shared  # the whole run stops: whose memory it is, unknown


def test_a_machine_without_meminfo_has_no_witness(monkeypatch):
    monkeypatch.setattr(hidden_memory, "meminfo", lambda: None)
    assert hidden_memory.MemoryWitness().hidden() is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/meminfo is Linux's")
def test_socket_buffers_written_and_never_read_are_seen(monkeypatch):
    """Measured on the real /proc/meminfo: 256 MiB queued in socketpairs shows as memory no process holds (less the
    free pages the kernel keeps on per-CPU lists, which MemFree does not count: 30-130 MiB here)."""
    before = hidden_memory.kernel_held(hidden_memory.meminfo())
    pairs, queued = [], 0
    try:
        while queued < 256 * MiB:
            pair = socket.socketpair()
            pairs.append(pair)
            pair[0].setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 30)  # as much as the system allows
            pair[0].setblocking(False)
            try:
                while True:
                    queued += pair[0].send(b"x" * 65536)
            except BlockingIOError:
                pass
        grown = hidden_memory.kernel_held(hidden_memory.meminfo()) - before
    finally:
        for pair in pairs:
            for end in pair:
                end.close()
    assert grown > 96 * MiB, f"{grown / MiB:.0f} MiB seen of {queued / MiB:.0f} MiB queued"  # other programs may free some meanwhile


def test_the_run_s_trees_together_stop_the_one_holding_the_most_never_a_bystander():
    """Attack wave 6: eight lanes each held 200 MiB under a 256 MiB tree limit, 1.6 GB in one run."""
    witness, lanes = hidden_memory.MemoryWitness(), [object() for _ in range(4)]
    limit = 1000 * MiB
    assert witness.together(lanes[0], 10 * MiB, limit, 1.0) is None  # a bystander
    for lane in lanes[1:3]:
        assert witness.together(lane, 300 * MiB, limit, 1.0) is None  # 610 MB together: within
    said = witness.together(lanes[3], 400 * MiB, limit, 1.0)
    assert said and "held 1,010 MB together (4 at once), over the 1,000 MB" in said and "the most (400 MB)" in said
    assert witness.together(lanes[0], 12 * MiB, limit, 1.0) is None, "over, but not the one holding the most"
    witness.forget(lanes[3])
    assert witness.together(lanes[1], 300 * MiB, limit, 1.0) is None, "once the hoarder's check is over"
    assert witness.together(lanes[2], 700 * MiB, limit, 0.0) is None, "a look older than `recent` counts no more"
