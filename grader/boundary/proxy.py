"""The grader's end of the zygote (it imports the student's rover once and starts workers) and of each worker.

A worker takes requests and gives answers, each matched by an id the worker cannot predict.

An answer is one JSON line, at most MAX_ANSWER bytes, an object with the request's id and one
of `ok`, `raised` or `bad`. Anything else (garbage, a flood, an answer to a request never
sent, a worker that dies or keeps a forked copy of itself) fails that request with a clear
message, as a WorkerLost; a request past the check's clock is a CheckTimeout (grader.boundary.clocks). Both are
BaseExceptions, so no `except Exception` in a check can swallow them.

While a `run_agent` request is open, the worker may send interim lines `{"id", "model": request}`: the student's
loop asking the model. The grader's own scripted model answers each (`{"id", "reply": ...}` on the orders pipe) and
records it, so what the loop sent is what the grader received, never what the worker says it sent.

Process ids the student's side gives are its own (a PID namespace numbers them afresh): the boundary turns them
into the grader's view (`host_pid`) before anything is done with them. The worker's end is grader.boundary.worker.
"""
from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from grader.boundary import starting
from grader.boundary.backends.linux_proc import oom_kills, open_deleted
from grader.boundary.clocks import CheckTimeout, Clock, MemoryExceeded
from grader.boundary.crash import crash_site, dump_stack as _dump_stack
from grader.boundary.processes import children, cpu, ending, exit_story, kill_tree, name, process, runnable, running, tree
from grader.boundary.runfolder import CRASH_LOG, MAX_ANSWER, RunFolder, remove_tree
from grader.boundary.worker import UP


GRADER_PATH = [entry for entry in sys.path if entry and Path(entry).is_absolute()]  # what the side imports the grader from

OUT_OF_MEMORY = "the machine ran out of memory and its kernel ended the largest process"  # graded again in class grade
COMPLAINT = 1 << 16  # bytes of the side's start-up complaints the grader reads (it quotes the last line)
DYING = 1.0  # seconds a process the kernel is already ending may take to end before it counts as left running
ZYGOTE_GROWTH = 64 << 20  # bytes of anonymous memory the zygote may gain after the import (its own loop needs little)


class WorkerLost(BaseException):
    """The worker broke the protocol or died; the message says how, for the check's report."""


class Stopped(BaseException):
    """The run is being stopped (Ctrl-C, SIGTERM): the check ends unjudged."""


class Zygote:
    """The process that imports the student's rover once, then starts a fresh worker (under its keeper) on request:
    forked from it, or spawned as a new interpreter (grader.boundary.starting)."""

    def __init__(self, run: RunFolder, workspace: Path, boundary, harness: str):
        """`harness`: the module (a dotted name) whose `answer` serves each request in the workers."""
        self.scratch = run.folder("scratch")
        self.run, self.workspace = run, workspace
        self.boundary = boundary
        self.mode = starting.mode()  # fork or spawn: how the zygote starts each keeper and worker
        ours, theirs = socket.socketpair()
        try:
            self.process = boundary.start(starting.command(GRADER_PATH, "zygote", harness, str(workspace), str(theirs.fileno()), self.mode),
                                          run, workspace, (theirs.fileno(),), self.scratch)
        finally:
            theirs.close()
        self.control = ours
        self.lock = threading.Lock()
        self.broken = ""  # once it has failed to fork a worker, it is not asked again
        self._buffer = b""
        self.keepers: set[int] = set()  # the zygote's children the grader asked for
        self.up = False  # the zygote said it is set up: the student's code may run from now on, and its stderr is theirs
        self._anon: int | None = None  # its anonymous memory once the import was over

    def background(self, strays: bool = False) -> str:
        """What the student's code keeps doing in the zygote after its import ('' if nothing): its own threads, memory
        it gained, deleted files it holds, and with `strays` (before any worker: later, a killed worker's orphans come
        to the zygote, which ends them) children the grader did not ask for. Nothing of the student's should run there
        once imported, yet a thread started at import, a signal handler or an audit hook on fork can, and no check's
        clock watches the zygote."""
        with self.lock:  # never while a fork is under way: its keeper is known before it is looked for
            pid = self.boundary.host_pid(self.boundary.first_pid)
            proc = process(pid) if pid else None
            if proc is None:
                return ""
            try:
                threads = proc.num_threads()
                resident = proc.memory_info()
            except Exception:  # ended: its death is the lanes' to report
                return ""
            started = [child for child in children(pid) if child not in self.keepers and running(child)] if strays else []
        anon = resident.rss - getattr(resident, "shared", 0)
        self._anon = anon if self._anon is None else self._anon
        found = [f"{threads - 1} thread(s)"] * (threads > 1) + [f"{len(started)} process(es)"] * bool(started)
        if anon > self._anon + ZYGOTE_GROWTH:
            found.append(f"{(anon - self._anon) >> 20:,} MB more memory")
        deleted = open_deleted([pid], str(self.run.path))
        if deleted:
            found.append(f"{len(deleted)} deleted file(s) held open ({sum(deleted.values()) >> 20:,} MB)")
        return ", ".join(found)

    def end_strays(self) -> None:
        """End what the zygote started that is not a keeper."""
        pid = self.boundary.host_pid(self.boundary.first_pid)
        if pid:
            kill_tree([child for child in children(pid) if child not in self.keepers])

    def imported(self, limit: float, stopping) -> dict:
        """How the import went: {"ok": ...}, or {"raised": ...}; WorkerLost if it died, CheckTimeout if it hangs.
        The clock is the CPU of the student's side (a busy machine slows an import down without making it the code's fault)."""
        clock = Clock(limit, self.boundary.processes).begin().watching(self.run.disk, memory=self.run.memory)  # its files too: no folder of its own
        line = self._line(clock, stopping)
        if line + b"\n" == UP:
            self._hear_no_more()
            line = self._line(clock, stopping)
        answer = _decode_line(line)
        if not isinstance(answer, dict) or len(answer.keys() & {"ok", "raised", "bad"}) != 1:
            raise WorkerLost(f"the import answered with something that is not an answer: {str(answer)[:80]}")
        clock.last_look()
        return answer

    def fork(self, scratch: Path, pipes: tuple[int, int, int], stopping) -> int:
        """A new keeper (and worker) on these pipes: its pid."""
        with self.lock:
            if self.broken:
                raise WorkerLost(self.broken)
            try:
                socket.send_fds(self.control, [str(scratch).encode()], list(pipes))
                keeper = self.boundary.host_pid(int(self._line(Clock.wall(20), stopping)))
                if keeper is None:
                    raise ValueError("not a process of the sandbox")
                self.keepers.add(keeper)
                return keeper
            except (OSError, ValueError, WorkerLost, CheckTimeout):
                self.broken = "the process that starts workers is gone or stuck: did the code kill it, or leave a thread behind at import?"
                raise WorkerLost(self.broken) from None

    def crash_log(self) -> str:
        """The zygote's faulthandler dump, read through the run folder's one reader."""
        return self.run.read(self.scratch / CRASH_LOG)

    def stuck_at(self) -> str:
        main = self.boundary.host_pid(self.boundary.first_pid)
        return _dump_stack([main] if main else [], self.crash_log, self.workspace)

    def death(self) -> str:
        try:
            code = self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            code = None
        where = crash_site(self.crash_log(), self.workspace)
        return f"{exit_story(code)}{', in ' + where if where else ''}"

    def complaint(self) -> str:
        """The last line the side wrote to its stderr before dying ("bwrap: Can't ..."), or "" if none, still running,
        or said after the zygote was up: from then on the student's code may have written there (bwrap's init holds
        the same stderr), and the grader has stopped listening."""
        if self.up or self.process.poll() is None or self.process.stderr is None or self.process.stderr.closed:
            return ""
        said = b""
        while len(said) < COMPLAINT and select.select([self.process.stderr], [], [], 0)[0]:
            chunk = os.read(self.process.stderr.fileno(), COMPLAINT - len(said))
            if not chunk:
                break
            said += chunk
        lines = said.decode(errors="replace").strip().splitlines()
        return lines[-1][:300] if lines else ""

    def _hear_no_more(self) -> None:
        """The zygote is up: close the grader's end of the side's stderr before the student's code can write to it."""
        self.up = True
        if self.process.stderr:
            self.process.stderr.close()

    def stop(self) -> None:
        if self.process.stderr:
            self.process.stderr.close()
        try:
            self.control.sendall(b"bye")
        except OSError:
            pass
        self.control.close()
        try:
            self.process.wait(timeout=1)
        except subprocess.TimeoutExpired:
            kill_tree([self.process.pid])
            self.process.wait()

    def _line(self, clock: Clock, stopping) -> bytes:
        while b"\n" not in self._buffer:
            while not select.select([self.control], [], [], min(0.1, clock.left() or 0.1))[0]:
                if stopping.is_set():
                    raise Stopped()
                clock.check()
            chunk = self.control.recv(1 << 16)
            if not chunk:
                raise WorkerLost(f"it {self.death()}")
            self._buffer += chunk
            if len(self._buffer) > MAX_ANSWER:
                raise WorkerLost("it flooded the grader with data")
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line


class Worker:
    def __init__(self, run: RunFolder, zygote: Zygote, stopping):
        self.oom_kills = oom_kills()  # the machine's count as it began: a SIGKILL after it grew may be the kernel's
        self.scratch = run.folder("scratch")
        self.workspace = zygote.workspace
        self.zygote = zygote
        # its folder is its own to answer for from its first moment (a spawned worker imports the rover as it is born)
        # until start() is over, or until discard() has removed it: no other clock ever sees what its import wrote as
        # no one's. Only while a clock watches it: a stopped worker's folder that grows is no one's, and stops the run.
        self._claim = contextlib.ExitStack()
        self._claim.enter_context(run.disk.claim((self.scratch.name,)))
        orders_read, self.orders = os.pipe()
        self.answers, answers_write = os.pipe()
        life_read, self.life = os.pipe()
        try:
            self.keeper = zygote.fork(self.scratch, (orders_read, answers_write, life_read), stopping)
        except BaseException:
            for fd in (self.orders, self.answers, self.life):
                os.close(fd)
            self._claim.close()
            raise
        finally:
            for fd in (orders_read, answers_write, life_read):
                os.close(fd)
        os.set_blocking(self.orders, False)
        self.pid = 0  # the worker proper (the keeper's child), once it has said so
        self.spoiled = False  # True once the worker must not serve another check
        self.ended_by: Exception | None = None  # the clock or the cap that ended its call: the check's verdict
        self.machine_fault = False  # True once the kernel's out-of-memory killer ended it
        self.exit: int | None = None  # the worker's exit status, as its keeper reported it
        self._chunks: list[bytes] = []
        self._answered: set[str] = set()
        self._stopped = False

    def start(self, limit: float, stopping) -> None:
        """Wait for the worker to answer (forked, it has the rover imported already; spawned, it imports it now)."""
        mine = (self.scratch.name,)  # a spawned worker imports the rover again: its files are its own to answer for
        clock = self.clock(limit).watching(self.zygote.run.disk, mine, self.zygote.run.memory)
        try:
            answer = self.request("import", clock, stopping)
            clock.last_look()
        except BaseException:
            self.zygote.run.memory.forget(clock)
            self.discard()
            raise
        self._claim.close()  # from here on, each check's clock claims it (runner._judge)
        raised = answer.get("raised")
        if isinstance(raised, dict):  # spawned: its own import failed where the zygote's had passed
            self._lose(f"a fresh worker's import of rover raised {str(raised.get('type'))[:80]} "
                       f"({str(raised.get('where') or 'no line of yours')[:120]}), though the first import passed")
        inner = answer["ok"].get("pid") if isinstance(answer.get("ok"), dict) else None
        pid = self.zygote.boundary.host_pid(inner) if type(inner) is int else None
        if pid is None or pid not in children(self.keeper):
            self._lose("the worker gave a process id that is not its own")
        self.pid = pid

    def clock(self, budget: float) -> Clock:
        """A clock on this worker's whole tree (the worker, whatever it started, daemons its keeper took in)."""
        return Clock(budget, self.tree, own=(self.keeper, self.pid), side=self._side_cpu).begin()

    def _side_cpu(self) -> float:
        return cpu(self.zygote.boundary.processes())

    def tree(self, below: bool = False) -> list:
        """The keeper and every process below it (daemons it took in included); `below`: without the keeper."""
        return tree(self.keeper, include_root=not below)

    def request(self, op: str, clock: Clock, stopping, on_model=None, on_spy=None, **fields) -> dict:
        if self.ended_by is not None:  # a check's clean-up asking again (a finally): the worker is still busy with
            raise self.ended_by        # the call that ran out, and that is the check's verdict, not what it says next
        ident = os.urandom(12).hex()
        clock.waiting()
        self._send(json.dumps({"id": ident, "op": op, **fields}).encode() + b"\n", clock, stopping)
        while True:
            answer = self._decode(self._line(clock, stopping))
            if "model" in answer and answer["id"] == ident and on_model is not None:
                reply = on_model(answer["model"])  # the grader's scripted model, here, records and answers it
                clock.waiting()
                self._send(json.dumps({"id": ident, "reply": reply}).encode() + b"\n", clock, stopping)
                continue
            if "spy" in answer and answer["id"] == ident and on_spy is not None:
                on_spy(answer["spy"])  # the spy tool ran: the grader hears it as it happens, not in the run's answer
                continue
            if "model" in answer or "spy" in answer:
                self._lose("the worker asked the model (or spoke as the spy) outside a run of the agent")
            if answer["id"] == ident:
                self._answered.add(ident)
                if not running(self.keeper):  # the call killed the keeper above it: its answer is no evidence
                    self._lose(self._death())
                self._check_forks()
                return answer
            if answer["id"] not in self._answered:
                self._lose("the worker answered a request it was never sent: was something writing to the grader's pipe?")

    def running(self, inner: int) -> bool:
        """Is the student's process `inner` (as its side numbers it) still running?"""
        host = self.zygote.boundary.host_pid(inner) if type(inner) is int else None
        return host is not None and running(host)

    def kill(self, inner: int) -> None:
        host = self.zygote.boundary.host_pid(inner) if type(inner) is int else None
        if host is not None:
            kill_tree([host])

    def runnable(self, inner: int) -> bool:
        """Is the student's process `inner` running or waiting for a CPU (as a killed one does, to end), not asleep?"""
        host = self.zygote.boundary.host_pid(inner) if type(inner) is int else None
        found = process(host) if host is not None else None
        return found is not None and runnable([found])

    def crash_log(self) -> str:
        """The worker's faulthandler dump, read through the run folder's one reader."""
        return self.zygote.run.read(self.scratch / CRASH_LOG)

    def stuck_at(self) -> str:
        """Where the worker's Python is right now (`file line N` in the workspace), from a faulthandler dump."""
        return _dump_stack([self.pid] if self.pid else children(self.keeper), self.crash_log, self.workspace)

    def stop(self, release: bool = True) -> None:
        """End the worker and everything below it (the keeper does the sweep; this makes sure); `release`: its claim on
        its folder too (a stopped worker is watched by no clock)."""
        if self._stopped:
            return
        self._stopped = True
        if release:
            self._claim.close()
        try:
            os.write(self.life, b"q")  # a planned stop: the keeper sweeps its tree and exits
        except OSError:
            pass
        if self.pid:
            kill_tree([self.pid])
        deadline = time.monotonic() + 1
        while running(self.keeper) and time.monotonic() < deadline:
            time.sleep(0.005)
        if running(self.keeper):
            kill_tree([self.keeper])
        for fd in (self.orders, self.answers, self.life):
            os.close(fd)

    def discard(self) -> None:
        """Stop it and remove its folder, which counts no more; only then does its claim on the folder end (released
        first, another check's clock could find the folder's files in its figures and take them for no one's)."""
        self.stop(release=False)
        try:
            remove_tree(self.scratch)
            self.zygote.run.disk.gone(self.scratch.name)
        finally:
            self._claim.close()

    # --- the wire ---------------------------------------------------------------------------

    def _send(self, data: bytes, clock: Clock, stopping) -> None:
        while data:
            self._wait([], [self.orders], clock, stopping)
            try:
                data = data[os.write(self.orders, data):]
            except BlockingIOError:
                continue
            except OSError:
                self._lose("the worker stopped reading requests")

    def _line(self, clock: Clock, stopping) -> bytes:
        size = sum(len(chunk) for chunk in self._chunks)
        while True:
            if self._chunks and b"\n" in self._chunks[-1]:
                data = b"".join(self._chunks)
                line, rest = data.split(b"\n", 1)
                self._chunks = [rest] if rest else []
                return line
            self._wait([self.answers], [], clock, stopping)
            chunk = os.read(self.answers, 1 << 20)
            if not chunk:
                self._lose(self._death())
            self._chunks.append(chunk)
            size += len(chunk)
            if size > MAX_ANSWER and b"\n" not in chunk:
                self._lose(f"the worker sent over {MAX_ANSWER >> 20} MB without finishing its answer: a flood on the grader's pipe")

    def _wait(self, reading: list[int], writing: list[int], clock: Clock, stopping) -> None:
        while True:
            if stopping.is_set():
                raise Stopped()
            try:
                clock.check()
            except (CheckTimeout, MemoryExceeded) as ended:
                self.spoiled, self.ended_by = True, ended
                raise
            ready = select.select(reading, writing, [], clock.left() or 0.05)
            if ready[0] or ready[1]:
                return
            if not running(self.keeper):
                self._lose(self._death())

    def _decode(self, line: bytes) -> dict:
        answer = _decode_line(line)
        if isinstance(answer, dict) and answer.keys() == {"exit"}:  # the keeper's last word: the worker has ended
            self.exit = answer["exit"] if type(answer["exit"]) is int else None
            self._lose(self._death())
        if not (isinstance(answer, dict) and type(answer.get("id")) is str and len(answer.keys() & {"ok", "raised", "bad", "model", "spy"}) == 1):
            self._lose(f"the worker answered with something that is not an answer: {line[:80]!r}")
        return answer

    def _check_forks(self) -> None:
        left = [pid for pid in children(self.pid) if running(pid)] if self.pid else []  # a zombie has ended: no harm
        if left and all(ending(pid) for pid in left):  # killed just before the call returned (killpg, no wait): the
            deadline = time.monotonic() + DYING          # kernel is ending them, and they run no more code of their own
            while left and time.monotonic() < deadline:
                time.sleep(0.01)
                left = [pid for pid in left if running(pid)]
        if left:
            self.spoiled = True
            names = ", ".join(f"{pid} ({name(pid)})" for pid in left[:3])
            self._lose(f"the call returned but left {len(left)} process(es) of its own running ({names}): "
                       "a fork that never exited, or a process started and never waited for")

    def _death(self) -> str:
        where = crash_site(self.crash_log(), self.workspace)
        if self.exit is None and not running(self.keeper):
            return "the worker process was killed with its parent (the grader's keeper) during this call: did the code kill its parent?"
        killed = self.exit in (-signal.SIGKILL, 128 + signal.SIGKILL)
        if killed and self.oom_kills is not None and (oom_kills() or 0) > self.oom_kills:
            self.machine_fault = True  # the grader's own finding: its words are never the code's
            return f"the worker process was killed during this call: {OUT_OF_MEMORY}; run it again"
        return (f"the worker process {exit_story(self.exit)} during this call{', in ' + where if where else ''}: "
                "did the code call os._exit, kill its parent, or crash Python?")

    def _lose(self, message: str):
        self.spoiled = True
        raise WorkerLost(message)


def _decode_line(line: bytes):
    try:
        return json.loads(line)
    except ValueError:
        return None
