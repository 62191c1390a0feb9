"""`python -m rover` for the live tests, forked from a process that has imported the anthropic SDK already.

Importing the SDK costs about 3 CPU seconds here, once per live run: most of test_live.py's cost. A `WarmRover` keeps
one single-threaded helper process that imports the SDK (and httpx) once; each run is a fork of it that takes the
run's folder, environment, arguments and output files, and runs rover's `__main__` as `python -m rover` would. The
workspace's own `rover` is imported fresh in each fork (the helper never imports it). One live test in test_live.py
still starts a real `python -m rover`, as a student does. The helper is the session's (conftest's `warm_rover`), shared by
test_live.py and test_relay.py, which xdist keeps on one worker (the "anthropic" group): one import of the SDK there.
"""
from __future__ import annotations

import contextlib
import importlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

HELPER = r"""
import io, json, os, runpy, sys, traceback
import anthropic, httpx  # the costly imports, once, before any fork
for line in sys.stdin:
    order = json.loads(line)
    pid = os.fork()
    if pid == 0:
        try:
            os.chdir(order["cwd"])
            os.environ.clear()
            os.environ.update(order["env"])
            for fd, (path, mode) in enumerate([(os.devnull, os.O_RDONLY), (order["out"], os.O_WRONLY), (order["err"], os.O_WRONLY)]):
                os.dup2(os.open(path, mode), fd)
            sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", errors="surrogateescape")
            sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace", line_buffering=True)
            sys.argv = ["rover", *order["args"]]
            sys.path[0] = order["cwd"]
            code = 0
            try:
                runpy.run_module("rover", run_name="__main__", alter_sys=True)
            except SystemExit as done:
                code = done.code if isinstance(done.code, int) else (0 if done.code is None else (print(done.code, file=sys.stderr) or 1))
            except BaseException:
                traceback.print_exc()
                code = 1
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(locals().get("code", 1))
    _, status = os.waitpid(pid, 0)
    print(json.dumps({"code": os.waitstatus_to_exitcode(status)}), flush=True)
"""


class WarmRover:
    def __init__(self) -> None:
        self.helper = subprocess.Popen([sys.executable, "-c", HELPER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                       start_new_session=True)  # its forks too: one killpg ends them all

    def run(self, root: Path, args: tuple[str, ...], env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess:
        """What `subprocess.run([sys.executable, "-m", "rover", *args], cwd=root, env=env, capture_output=True,
        text=True)` gives, from a fork of the helper."""
        with tempfile.TemporaryDirectory(prefix="warm-rover-") as scratch:
            out, err = Path(scratch) / "out", Path(scratch) / "err"
            out.touch()
            err.touch()
            order = {"cwd": str(root), "env": env, "args": list(args), "out": str(out), "err": str(err)}
            self.helper.stdin.write(json.dumps(order) + "\n")
            self.helper.stdin.flush()
            if not select.select([self.helper.stdout], [], [], timeout)[0]:
                self.close()
                raise subprocess.TimeoutExpired(["rover", *args], timeout)
            code = json.loads(self.helper.stdout.readline())["code"]
            return subprocess.CompletedProcess([sys.executable, "-m", "rover", *args], code,
                                               out.read_text(encoding="utf-8"), err.read_text(encoding="utf-8"))

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.helper.stdin.close()
        try:
            self.helper.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.helper.pid, signal.SIGKILL)
            self.helper.wait()


class LazyAnthropic:
    """The anthropic module, imported on first use: a test file that names it at the top would make every xdist worker
    pay the import while collecting, whether or not it runs one of the file's tests."""

    def __getattr__(self, name: str):
        if name.startswith("_"):  # pytest's collector asks every module-level name for __test__ and the like
            raise AttributeError(name)
        return getattr(importlib.import_module("anthropic"), name)
