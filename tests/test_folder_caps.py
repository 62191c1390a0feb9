"""The run folder's caps (grader.boundary.folder_caps), measured as the grader measures them: what a walk counts, what
it never follows, and who is stopped. The hostile floods graded end to end are in tests/fixtures/hostile/
(disk_flood, file_flood, home_flood, flood_at_import), run by tests/test_sandbox.py."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from grader.boundary.clocks import Clock, DiskExceeded
from grader.boundary.folder_caps import DiskWatch, measure
from grader.boundary.processes import process
from grader.boundary.runfolder import RunFolder

MiB = 1 << 20


@pytest.fixture
def folder():
    run = RunFolder()
    yield run
    run.close()
    assert not run.path.exists()


def write(path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as out:
        out.write(os.urandom(size))  # incompressible and not sparse: its blocks are really there


def test_a_walk_counts_blocks_and_entries_and_follows_no_link(folder, tmp_path):
    write(folder.path / "check-1" / "a" / "big", 3 * MiB)
    write(tmp_path / "outside", 8 * MiB)
    (folder.home / "to-outside").symlink_to(tmp_path / "outside")
    (folder.home / "to-root").symlink_to("/")
    os.link(folder.path / "check-1" / "a" / "big", folder.tmp / "same-big")
    size = measure(folder.fd)
    assert 3 * MiB <= size.bytes < 4 * MiB, "a link is not its target, and a hard-linked file counts once"
    assert size.entries == 9 and size.complete  # tmp, home, shm, check-1, a, big, same-big, two links
    assert max(size.by_bytes, key=size.by_bytes.get) == "check-1"


def test_a_deep_or_locked_maze_is_measured_whole(folder):
    here = folder.tmp
    for _ in range(1500):  # far deeper than the walk holds fds for
        here = here / "d"
        here.mkdir()
    write(here / "deep", 2 * MiB)
    write(folder.home / "locked" / "inside", 2 * MiB)
    (folder.home / "locked").chmod(0)
    size = measure(folder.fd)
    assert size.complete and size.entries == 3 + 1501 + 2
    assert 4 * MiB <= size.bytes < 5 * MiB


def test_the_walk_stops_at_the_entry_cap(folder):
    for number in range(300):
        (folder.tmp / str(number)).touch()
    size = measure(folder.fd, entries_cap=100)
    assert not size.complete and size.entries == 101


def test_only_the_check_that_owns_the_overflow_is_stopped(folder):
    assert DiskWatch(folder, bytes_cap=4 * MiB).over([], {"check-1"}) is None
    write(folder.path / "check-2" / "hoard", 5 * MiB)
    watch = DiskWatch(folder, bytes_cap=4 * MiB)  # a walk's figures serve for a while: a fresh watch walks again
    with watch.claim(["check-2"]):
        assert watch.over([], {"check-1"}) is None, "another check's folder: its own clock stops it"
        said, shared = watch.over([], {"check-2"})
        assert not shared and "MB its folders may hold together" in said and "the check's folder" in said
    said, shared = watch.over([], {"check-1"})  # no running check answers for it any more: everyone stops
    assert shared


def test_a_folder_removed_during_a_walk_is_no_ones_overflow_but_one_made_again_counts(folder, monkeypatch):
    """A failed worker's folder is removed while still claimed; a walk that began before the removal still counts it,
    and must not stop every other check as no one's overflow (issue 26's load run: a flood at one spawned worker's
    import failed three checks). A walk that begins after the removal counts what it finds under that name: code that
    makes the folder again and fills it is over the cap (an attack hid 1.5 GB that way from a list of removed names)."""
    import shutil

    from grader.boundary import folder_caps

    write(folder.path / "scratch-2" / "hoard", 6 * MiB)
    watch = DiskWatch(folder, bytes_cap=4 * MiB)
    claim = watch.claim(["scratch-2"])
    claim.__enter__()
    assert watch.over([], {"check-1"}, fresh=True) is None, "claimed: its own clock stops it"
    walk = folder_caps.measure

    def spanning(fd, cap):  # the walk sees the folder; the grader removes it, then ends its claim, before the walk ends
        seen = walk(fd, cap)
        shutil.rmtree(folder.path / "scratch-2")
        watch.gone("scratch-2")
        claim.__exit__(None, None, None)
        return seen

    monkeypatch.setattr(folder_caps, "measure", spanning)
    assert watch.over([], {"check-1"}, fresh=True) is None, "what the walk saw was removed before it ended"
    assert watch.size().by_bytes["scratch-2"] >= 6 * MiB, "the walk's figures still show it"
    monkeypatch.setattr(folder_caps, "measure", walk)
    write(folder.path / "scratch-2" / "again", 6 * MiB)  # made again by the code, after the removal
    said, shared = watch.over([], {"check-1"}, fresh=True)
    assert shared and "MB its folders may hold together" in said
    assert "'scratch-2', a folder no running check answers for" in said, "not 'its working folder': it is not the caller's"


def test_deleted_files_still_open_count_and_the_clock_kills_its_tree(folder):
    holder = subprocess.Popen([sys.executable, "-c", "import os, sys, time\n"
                               f"fd = os.open({str(folder.tmp / 'gone')!r}, os.O_CREAT | os.O_WRONLY)\n"
                               f"os.unlink({str(folder.tmp / 'gone')!r})\n"
                               "for _ in range(6): os.write(fd, os.urandom(1 << 20))\n"
                               "print(flush=True); time.sleep(60)"], stdout=subprocess.PIPE)
    try:
        holder.stdout.readline()
        assert measure(folder.fd).bytes < MiB, "the walk cannot see it"
        folder.disk.bytes_cap = 4 * MiB
        clock = Clock(10, lambda: [process(holder.pid)]).begin().watching(folder.disk, {"tmp"})
        clock._next = 0  # look now
        with pytest.raises(DiskExceeded, match="deleted ones it still holds open"):
            clock.check()
        assert holder.wait(timeout=10) == -9
    finally:
        holder.kill()
        holder.wait()


def test_a_flood_finished_between_two_looks_is_caught_by_the_last_look(folder):
    folder.disk.bytes_cap = 4 * MiB
    clock = Clock(10).begin().watching(folder.disk, {"check-1"})
    write(folder.path / "check-1" / "flood", 5 * MiB)  # written and done before the clock's first look
    clock.check()  # not yet a quarter second: no look
    with pytest.raises(DiskExceeded, match="over the 4 MB"):
        clock.last_look()


def test_last_looks_waiting_on_one_walk_share_the_next_and_never_an_older_one(folder, monkeypatch):
    """Lanes that end their checks at once need a walk begun after each asked, not one each."""
    import threading

    from grader.boundary import folder_caps

    walk, walks, under_way, go_on = folder_caps.measure, [], threading.Event(), threading.Event()

    def counted(fd, cap):
        walks.append(threading.current_thread().name)
        if len(walks) == 1:
            under_way.set()
            go_on.wait(10)
        return walk(fd, cap)

    monkeypatch.setattr(folder_caps, "measure", counted)
    first = threading.Thread(target=folder.disk.size, kwargs={"fresh": True}, name="first")
    first.start()
    assert under_way.wait(10)
    write(folder.path / "check-1" / "late", 2 * MiB)  # written after the first walk began: it cannot count it
    waiting = [threading.Thread(target=folder.disk.size, kwargs={"fresh": True}, name=f"waiting-{n}") for n in range(3)]
    for thread in waiting:
        thread.start()
    time.sleep(0.2)  # all three wait on the lock
    go_on.set()
    for thread in [first, *waiting]:
        thread.join(10)
    assert len(walks) == 2, f"one walk for the three that waited, begun after they asked; got {walks}"
    assert folder.disk.size().by_bytes["check-1"] >= 2 * MiB


def test_disk_lost_where_no_walk_sees_it_stops_the_run_as_an_error(folder, monkeypatch):
    """Attack wave 3: a file deleted but held as an fd in flight through a socket (or by a bare mapping) fills the disk
    where neither the walk nor the tree's open fds show it. The file system's free space is the last witness."""
    from grader.boundary import folder_caps
    from grader.boundary.clocks import HiddenDisk

    from types import SimpleNamespace

    def disk(free: int, size: int = 1000 << 30):
        return lambda path: SimpleNamespace(f_bavail=free >> 12, f_frsize=4096, f_blocks=size >> 12)

    folder.disk._free = 100 << 30  # a disk of 1,000 GiB: 10% free, nearly full
    monkeypatch.setattr(folder_caps, "_statvfs", disk((100 << 30) - (1 << 30)))  # 1 GiB gone: within HIDDEN
    clock = Clock(10).begin().watching(folder.disk, {"check-1"})
    clock.last_look()
    monkeypatch.setattr(folder_caps, "_statvfs", disk((100 << 30) - (3 << 30), size=200 << 30))  # gone, but room to spare
    clock.last_look()
    monkeypatch.setattr(folder_caps, "_statvfs", disk((100 << 30) - (3 << 30)))
    with pytest.raises(HiddenDisk, match="lost 3,072 MB during the run") as stopped:
        clock.last_look()
    assert stopped.value.shared

