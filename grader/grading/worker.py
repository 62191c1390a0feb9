"""The processes that host the student's code, started by grader.grading.proxy as `main(["zygote", WORKSPACE, CONTROL])`.

The zygote takes the limits (address space, file size), imports the student's `rover` once,
says how that went on CONTROL (a unix socket), and then forks one keeper per worker the
grader asks for (the request carries the worker's three pipes). A keeper is the subreaper
of its own tree: it forks the worker proper, which answers the grader's requests, one JSON
line each way (grader.grading.harness says what each does), and waits. When the worker
dies, or the grader stops it (b"q" on LIFE) or goes (LIFE closes), the keeper kills every
process below it, daemons included, and writes the worker's exit status as a last line.
The student's code never sees the grader as its parent. When CONTROL closes, the zygote
ends them all, and if the grader died without saying goodbye, removes the run folder too.
"""
from __future__ import annotations

import faulthandler
import json
import os
import resource
import select
import signal
import socket
import sys
import tempfile

from grader.grading import harness
from grader.grading.linux import PR_SET_CHILD_SUBREAPER, PR_SET_PDEATHSIG, extras, prctl
from grader.grading.processes import children, kill_tree
from grader.grading.runfolder import CRASH_LOG, MAX_ANSWER, PREFIX

ADDRESS_SPACE = int(os.environ.get("WORKSHOP_WORKER_MEMORY", 1 << 30))  # 1 GiB by default
FILE_SIZE = 128 << 20  # no single file a tool writes may pass 128 MiB


def main(argv: list[str]) -> None:
    workspace, control = argv[1], socket.socket(fileno=int(argv[2]))
    limits = [(resource.RLIMIT_FSIZE, FILE_SIZE)] + ([(resource.RLIMIT_AS, ADDRESS_SPACE)] if extras() else [])
    for limit, value in limits:  # RLIMIT_AS is a first line only: the grader counts the whole tree's memory itself
        resource.setrlimit(limit, (value, value))
    import psutil  # noqa: F401  (imported once here, so every keeper's sweep has it already)

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a file past the limit is an OSError for the writer, not a kill
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the grader's to handle
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    tempfile.tempdir = os.environ.get("TMPDIR") or None
    _crash_log()
    # Scenarios run `python -m pytest` through the student's bash tool: make that the grader's Python.
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # stash's suite needs no plugins; loading them costs ~1 s a run
    os.environ["ROVER_ANSWERS"] = "y"  # from lesson 6 the gate asks before unlisted commands: the grader says yes (gate checks script their own)
    sys.dont_write_bytecode = True  # keep the student's tree free of grader-made __pycache__ churn
    sys.path.insert(0, workspace)  # after every grader module is imported: the workspace cannot shadow them
    answer = _line(harness.answer("import", {}, workspace))
    try:
        control.sendall(answer)
    except OSError:  # the grader is gone already; the loop below sees it and tidies up
        pass
    zygote(workspace, control)


def zygote(workspace: str, control: socket.socket) -> None:
    wake = _wakeup()
    keepers: set[int] = set()
    farewell = False
    try:
        while True:
            ready = select.select([control, wake], [], [])[0]
            if wake in ready:
                os.read(wake, 512)
                keepers -= set(_reap())
                kill_tree([pid for pid in children(os.getpid()) if pid not in keepers])  # orphans of a keeper that was killed
            if control in ready:
                message, fds, _, _ = socket.recv_fds(control, 4096, 3)
                if not message or message == b"bye" or len(fds) != 3:
                    farewell = message == b"bye"
                    break
                keeper = os.fork()
                if keeper == 0:
                    control.close()
                    os.close(wake)
                    os.chdir(message.decode())
                    keep(workspace, *fds)
                for fd in fds:
                    os.close(fd)
                keepers.add(keeper)
                control.sendall(f"{keeper}\n".encode())
    except OSError:  # a reset or a broken pipe: the grader died mid-conversation
        pass
    kill_tree([os.getpid()], include_roots=False)
    _reap(until_none=True)
    run = os.path.dirname(os.getcwd())
    if not farewell and os.path.basename(run).startswith(PREFIX):  # the grader died: nobody else will tidy up
        from grader.grading.runfolder import remove_tree

        remove_tree(run)
    os._exit(0)


def keep(workspace: str, orders: int, answers: int, life: int) -> None:
    """Fork the worker; wait for it to end or for the grader's stop; end everything below; report the status."""
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    wake = _wakeup()
    me = os.getpid()
    worker = os.fork()
    if worker == 0:
        os.close(life)
        os.close(wake)
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != me:  # the keeper died before the worker started: nobody to answer to
            os._exit(70)
        serve(workspace, orders, answers)
    os.close(orders)
    status = None
    while status is None:
        ready = select.select([life, wake], [], [])[0]
        if wake in ready:
            os.read(wake, 512)
            status = _reap().get(worker, status)
        if life in ready:
            break
    kill_tree([me], include_roots=False)
    status = _reap(until_none=True).get(worker, status)
    try:
        os.write(answers, _line({"exit": 128 - status if status is not None and status < 0 else status}))
    except OSError:
        pass
    os._exit(0)


def serve(workspace: str, orders_fd: int, answers_fd: int) -> None:
    me = os.getpid()
    _crash_log()
    orders, answers = os.fdopen(orders_fd, "rb"), os.fdopen(answers_fd, "wb")
    current = [""]

    def ask_model(request: dict) -> dict:
        """The student's loop asks the model: the grader's scripted model answers, over the pipes."""
        answers.write(_line({"id": current[0], "model": request}))
        answers.flush()
        try:
            reply = json.loads(orders.readline())
            if reply["id"] != current[0]:
                raise ValueError(reply["id"])
            return reply["reply"]
        except (ValueError, KeyError, TypeError):
            os._exit(71)

    def tell_spy(args: dict) -> None:
        """The spy tool ran: the grader hears of it now, on the pipe (an interim line, like the model's requests)."""
        answers.write(_line({"id": current[0], "spy": args}))
        answers.flush()

    harness.MODEL[0] = ask_model
    harness.SPY[0] = tell_spy
    for line in orders:
        try:
            request = json.loads(line)
            ident, op = request["id"], request["op"]
        except (ValueError, KeyError, TypeError):
            os._exit(71)
        current[0] = ident
        answer = harness.answer(op, request, workspace)
        if os.getpid() != me:  # a fork that came back through the harness: it must not answer, nor stay
            os._exit(0)
        answer["id"] = ident
        data = _line(answer)
        if len(data) > MAX_ANSWER:
            data = _line({"id": ident, "bad": f"the answer was {len(data) / 1e6:.0f} MB; the grader takes at most {MAX_ANSWER >> 20} MB"})
        answers.write(data)
        answers.flush()
    os._exit(0)


def _line(data: dict) -> bytes:
    return json.dumps(data).encode() + b"\n"


def _crash_log() -> None:
    crash_log = open(CRASH_LOG, "w")
    faulthandler.enable(file=crash_log)  # a crash (a C stack overflow, ...) leaves its Python traceback here
    faulthandler.register(signal.SIGUSR1, file=crash_log)  # and so does a hang, when the grader asks


def _wakeup() -> int:
    """A pipe that becomes readable on every SIGCHLD, so select() sees children end."""
    read, write = os.pipe()
    os.set_blocking(write, False)
    signal.set_wakeup_fd(write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    return read


def _reap(until_none: bool = False) -> dict[int, int]:
    """Exit codes of the children that have ended (all of them, waiting, when until_none)."""
    ended = {}
    while True:
        try:
            pid, code = os.waitpid(-1, 0 if until_none else os.WNOHANG)
        except ChildProcessError:
            return ended
        if pid == 0:
            return ended
        ended[pid] = os.waitstatus_to_exitcode(code)
