"""The process that hosts the student's code: `main([WORKSPACE, ORDERS, ANSWERS, LIFE])` (started by grader.grading.proxy).

It starts as a keeper: it takes the limits (address space, file size), becomes the subreaper
of its own tree, and forks the worker proper, which imports the student's `rover` once and
then answers the grader's requests, one JSON line each way (grader.grading.harness says
what each request does). Anything can happen in the worker; the keeper only waits. When the
worker dies, or the grader goes (its end of the LIFE pipe closes), the keeper kills every
process below it, daemons included, and exits with the worker's status. The student's code
never sees the grader as its parent: its parent is the keeper.
"""
from __future__ import annotations

import faulthandler
import json
import os
import resource
import select
import shutil
import signal
import sys
import tempfile

from grader.grading import harness
from grader.grading.sandbox import PR_SET_CHILD_SUBREAPER, PR_SET_PDEATHSIG, kill_tree, prctl

ADDRESS_SPACE = int(os.environ.get("WORKSHOP_WORKER_MEMORY", 1 << 30))  # 1 GiB by default
FILE_SIZE = 128 << 20  # no single file a tool writes may pass 128 MiB
MAX_ANSWER = 32 << 20  # the grader refuses longer lines; say so here instead of sending them
CRASH_LOG = "crash.log"  # in the worker's scratch cwd: faulthandler's traceback of a hang or a crash


def main(argv: list[str]) -> None:
    workspace, orders, answers, life = argv[0], int(argv[1]), int(argv[2]), int(argv[3])
    for limit, value in ((resource.RLIMIT_AS, ADDRESS_SPACE), (resource.RLIMIT_FSIZE, FILE_SIZE)):
        resource.setrlimit(limit, (value, value))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a file past the limit is an OSError for the writer, not a kill
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the grader's to handle
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    keeper = os.getpid()
    child = os.fork()
    if child == 0:
        for fd in (life, wake_read, wake_write):
            os.close(fd)
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != keeper:
            os._exit(70)
        serve(workspace, orders, answers)
    os.close(orders)
    os.close(answers)
    keep(child, life, wake_read)


def keep(worker: int, life: int, wake: int) -> None:
    """Wait for the worker to end or the grader to go; then end everything below, and report the worker's status."""
    status, orphaned = None, False
    while status is None:
        ready = select.select([life, wake], [], [])[0]
        if wake in ready:
            os.read(wake, 512)
        while True:
            try:
                pid, code = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            if pid == worker:
                status = os.waitstatus_to_exitcode(code)
        if life in ready:
            orphaned = os.read(life, 1) == b""  # b"q" is the grader's stop; bare end-of-file, the grader is gone
            break
    kill_tree([os.getpid()], include_roots=False)
    while True:
        try:
            pid, code = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        if pid == worker and status is None:
            status = os.waitstatus_to_exitcode(code)
    run = os.path.dirname(os.getcwd())
    if orphaned and os.path.basename(run).startswith("workshop-check-"):  # nobody else is left to tidy up
        shutil.rmtree(run, ignore_errors=True)
    os._exit(128 - status if status is not None and status < 0 else (status or 0))


def serve(workspace: str, orders_fd: int, answers_fd: int) -> None:
    me = os.getpid()
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    tempfile.tempdir = os.environ.get("TMPDIR") or None
    crash_log = open(CRASH_LOG, "w")
    faulthandler.enable(file=crash_log)  # a crash (a C stack overflow, ...) leaves its Python traceback here
    faulthandler.register(signal.SIGUSR1, file=crash_log)  # and so does a hang, when the grader asks
    orders, answers = os.fdopen(orders_fd, "rb"), os.fdopen(answers_fd, "wb")
    # Scenarios run `python -m pytest` through the student's bash tool: make that the grader's Python.
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # stash's suite needs no plugins; loading them costs ~1 s a run
    sys.dont_write_bytecode = True  # keep the student's tree free of grader-made __pycache__ churn
    sys.path.insert(0, workspace)  # after every grader module is imported: the workspace cannot shadow them
    for line in orders:
        try:
            request = json.loads(line)
            ident, op = request["id"], request["op"]
        except (ValueError, KeyError, TypeError):
            os._exit(71)
        answer = harness.answer(op, request, workspace)
        if os.getpid() != me:  # a fork that came back through the harness: it must not answer, nor stay
            os._exit(0)
        answer["id"] = ident
        data = json.dumps(answer).encode() + b"\n"
        if len(data) > MAX_ANSWER:
            data = json.dumps({"id": ident, "bad": f"the answer was {len(data) / 1e6:.0f} MB; the grader takes at most {MAX_ANSWER >> 20} MB"}).encode() + b"\n"
        answers.write(data)
        answers.flush()
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])
