"""The processes that host the student's code, started by grader.boundary.proxy as `main(["zygote", HARNESS, WORKSPACE, CONTROL, MODE])`.

The zygote takes the limits (address space, file size), imports the student's `rover` once,
says how that went on CONTROL (a unix socket): that import is the one that judges it (an error,
a hang, a crash). It then starts one keeper per worker the grader asks for (the request carries
the worker's three pipes). A keeper is the subreaper of its own tree: it starts the worker proper,
which answers the grader's requests, one JSON line each way, and waits. HARNESS names the module
that answers them (`answer(op, request, workspace)`, and the `MODEL` and `SPY` hooks): the grading
layer's harness, named by the grader, so that this plumbing knows nothing of lessons or checks. When the worker dies, or the grader stops it (b"q" on LIFE) or goes (LIFE
closes), the keeper kills every process below it, daemons included, and writes the worker's exit
status as a last line. The student's code never sees the grader as its parent. When CONTROL
closes, the zygote ends them all, and if the grader died without saying goodbye, removes the run
folder too. Its first line on CONTROL is UP, sent before the student's code is imported: until then, and only
then, what the side writes on its stderr is the machine's (bwrap's, Python's) and the grader may quote it.

MODE (grader.boundary.starting) is how keepers and workers start. `fork`: the zygote forks the
keeper and the keeper the worker, which has the rover imported already. `spawn` (macOS, where a
fork after imports is unsafe): each is a fresh interpreter started with posix_spawn inside the same
boundary, `main(["keeper", HARNESS, WORKSPACE, SCRATCH, ORDERS, ANSWERS, LIFE])` and `main(["worker",
HARNESS, WORKSPACE, KEEPER, ORDERS, ANSWERS])`; the worker imports the rover itself, on its first request.
Both serve the same protocol, write the same crash log and sweep their trees the same way.
"""
from __future__ import annotations

import faulthandler
import importlib
import json
import os
import resource
import select
import signal
import socket
import sys
import tempfile

from grader.boundary.linux import PR_SET_CHILD_SUBREAPER, PR_SET_PDEATHSIG, extras, prctl
from grader.boundary.processes import children, kill_tree
from grader.boundary.replay import PATH as REPLAY
from grader.boundary.runfolder import CRASH_LOG, MAX_ANSWER, PREFIX
from grader.boundary.starting import spawn

ADDRESS_SPACE = int(os.environ.get("WORKSHOP_WORKER_MEMORY", 1 << 30))  # 1 GiB by default
FILE_SIZE = 128 << 20  # no single file a tool writes may pass 128 MiB
GRADER_PATH: list[str] = []  # sys.path as the grader handed it over (no workspace in it): what a spawned process gets
UP = b"up\n"  # the zygote's first line to the grader: set up, and about to import the student's code
HARNESS: list[str] = []  # the module that answers requests, as the grader named it: what a spawned process is told


def main(argv: list[str]) -> None:
    GRADER_PATH[:] = sys.path
    HARNESS[:] = [argv[1]]
    argv = [argv[0], *argv[2:]]
    role, workspace = argv[0], argv[1]
    if role == "keeper":  # spawn mode: a fresh interpreter, with the zygote's limits, environment and stdio
        orders, answers, life = _own(argv[3:6])
        os.chdir(argv[2])
        _settle(workspace, student=False)
        keep(workspace, orders, answers, life, "spawn")
    if role == "worker":
        orders, answers = _own(argv[3:5])
        _orphaned_unless(int(argv[2]))
        _harness()  # before the workspace is on sys.path: it cannot shadow it

        _settle(workspace)
        serve(workspace, orders, answers)
    control, mode = socket.socket(fileno=int(argv[2])), argv[3] if len(argv) > 3 else "fork"
    control.set_inheritable(False)  # no spawned keeper may hold the grader's line
    limits = [(resource.RLIMIT_FSIZE, FILE_SIZE)] + ([(resource.RLIMIT_AS, ADDRESS_SPACE)] if extras() else [])
    for limit, value in limits:  # RLIMIT_AS is a first line only: the grader counts the whole tree's memory itself
        resource.setrlimit(limit, (value, value))
    import psutil  # noqa: F401  (imported once here, so every forked keeper's sweep has it already)

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a file past the limit is an OSError for the writer, not a kill
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the grader's to handle (ignored, it stays so in a spawn)
    for number in (signal.SIGHUP, signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2, signal.SIGQUIT):
        signal.signal(number, signal.SIG_DFL)  # as a program expects them, whatever the grader inherited (nohup: HUP ignored)
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    _crash_log()
    # Scenarios run `python -m pytest` through the student's bash tool: make that the grader's Python, through the
    # script that runs the same tests on the same files once a grading (grader.boundary.replay).
    found = [os.environ[REPLAY]] if os.environ.get(REPLAY) else []
    os.environ["PATH"] = os.pathsep.join([*found, os.path.dirname(sys.executable), os.environ.get("PATH", "")])
    # No bytecode caches: a scripted edit can keep a file's size and land in the second its .pyc was written, and
    # Python would then run the old code (a correct tool failing the scenario only when it is fast).
    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # stash's suite needs no plugins; loading them costs ~1 s a run
    os.environ["ROVER_ANSWERS"] = "y"  # from lesson 6 the gate asks before unlisted commands: the grader says yes (gate checks script their own)
    harness = _harness()  # here, not at the top: a spawned keeper never needs it
    try:  # the last word before any of the student's code runs: from here on the side's stderr is no evidence
        control.sendall(UP)
    except OSError:
        pass
    _settle(workspace)
    answer = _line(harness.answer("import", {}, workspace))
    try:
        control.sendall(answer)
    except OSError:  # the grader is gone already; the loop below sees it and tidies up
        pass
    zygote(workspace, control, mode)


def _settle(workspace: str, student: bool = True) -> None:
    """What every interpreter of the side sets for itself (a spawned one too); `student`: it will import the rover."""
    tempfile.tempdir = os.environ.get("TMPDIR") or None
    sys.dont_write_bytecode = True  # keep the student's tree free of grader-made __pycache__ churn
    if student:
        sys.path.insert(0, workspace)  # after every grader module is imported (harness too): the workspace cannot shadow them


def zygote(workspace: str, control: socket.socket, mode: str) -> None:
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
                if mode == "spawn":
                    keeper = spawn(GRADER_PATH, ["keeper", *HARNESS, workspace, message.decode()], tuple(fds))
                else:
                    keeper = os.fork()
                    if keeper == 0:
                        control.close()
                        os.close(wake)
                        os.chdir(message.decode())
                        keep(workspace, *fds, mode)
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
        from grader.boundary.runfolder import remove_tree

        remove_tree(run)
    os._exit(0)


def keep(workspace: str, orders: int, answers: int, life: int, mode: str) -> None:
    """Start the worker; wait for it to end or for the grader's stop; end everything below; report the status."""
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    wake = _wakeup()
    me = os.getpid()
    if mode == "spawn":
        worker = spawn(GRADER_PATH, ["worker", *HARNESS, workspace, str(me)], (orders, answers))
    else:
        worker = os.fork()
        if worker == 0:
            os.close(life)
            os.close(wake)
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            _orphaned_unless(me)
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


def _orphaned_unless(keeper: int) -> None:
    """The worker dies with its keeper (where Linux allows); if the keeper is gone already, nobody is there to answer to."""
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != keeper:
        os._exit(70)


def _own(numbers: list[str]) -> list[int]:
    """The descriptors a spawned process was given, kept from anything it starts (a student's posix_spawn included)."""
    fds = [int(number) for number in numbers]
    for fd in fds:
        os.set_inheritable(fd, False)
    return fds


def serve(workspace: str, orders_fd: int, answers_fd: int) -> None:
    harness = _harness()  # imported already, before the workspace was put on sys.path

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


def _harness():
    """The module that answers requests (imported once; later calls find it in sys.modules)."""
    return importlib.import_module(HARNESS[0])


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
