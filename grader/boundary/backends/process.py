"""The process sandbox: the student's side in processes of its own, with limits, but the caller's user and view.

The fallback where no real boundary can run (and a backend the others build on). Every process of the side is
found from outside at the end: the zygote's tree, everything carrying the run's mark, and the orphans handed to
the grader while the run went on (it is their subreaper, where Linux allows).
"""
from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from grader.boundary import processes
from grader.boundary.linux import PR_SET_CHILD_SUBREAPER, prctl
from grader.boundary.runfolder import MARK, RunFolder

KNOBS = ("WORKSHOP_WORKER_MEMORY", "WORKSHOP_LINUX_EXTRAS")  # the grader's knobs the worker reads
TEST_HOOKS = "WORKSHOP_TEST_"  # what the kit's own hostile tests hand their fixtures (tags, paths, ports: no secret)


def environment(folder: RunFolder) -> dict[str, str]:
    """The student's side's whole environment: an allow-list, never the caller's keys, tokens or anything else."""
    keep = {key: value for key, value in os.environ.items()
            if key in ("PATH", "LANG", "LANGUAGE", "TZ") or key.startswith(("LC_", TEST_HOOKS)) or key in KNOBS}
    keep.setdefault("PATH", os.defpath)
    return {**keep, **folder.env()}


class Processes:
    name = "process"

    def environment(self, folder: RunFolder) -> dict[str, str]:
        """The allow-listed environment. A root grader hands the run folder to 65534 (backends.identity) for bwrap's
        side; here the side stays root, and git refuses to work in a repository another user owns ("dubious
        ownership"): the run folder's repositories are declared safe to it."""
        env = environment(folder)
        if self.name == "process" and hasattr(os, "geteuid") and os.geteuid() == 0:
            env.update(GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0="safe.directory", GIT_CONFIG_VALUE_0="*")
        return env

    def __init__(self) -> None:
        self.popen: subprocess.Popen | None = None
        self.token = ""
        self._before = set(processes.children(os.getpid()))
        self._since = time.time() - 1
        prctl(PR_SET_CHILD_SUBREAPER, 1)

    def start(self, command: list[str], folder: RunFolder, workspace: Path, pass_fds: tuple[int, ...], cwd: Path) -> subprocess.Popen:
        self.token = folder.token
        self.popen = subprocess.Popen(self.wrap(command, folder, workspace, cwd), cwd=cwd, env=self.environment(folder),
                                      # stderr: the side's own complaints (bwrap's, Python's) before the zygote points
                                      # its stdio at /dev/null, which it does before the student's code is imported
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                      pass_fds=pass_fds, start_new_session=True)
        return self.popen

    def wrap(self, command: list[str], folder: RunFolder, workspace: Path, cwd: Path) -> list[str]:
        return command

    @property
    def first_pid(self) -> int:
        """The started command's own pid, as the side numbers it."""
        return self.popen.pid if self.popen else 0

    def host_pid(self, pid: int) -> int | None:
        """The same number, if it is one of the side's processes (its tree, or a process carrying the run's mark)."""
        if any(proc.pid == pid for proc in self.processes()):
            return pid
        proc = processes.process(pid)
        try:
            return pid if proc is not None and proc.environ().get(MARK) == self.token else None
        except Exception:
            return None

    def processes(self) -> list:
        return processes.tree(self.popen.pid) if self.popen else []

    def usage(self) -> processes.Usage:
        return processes.usage(self.processes())

    def end(self) -> None:
        """Kill the side's tree, the marked processes, and the orphans reparented to us; reap what was ours."""
        roots = [self.popen.pid] if self.popen else []
        roots += [pid for pid in processes.children(os.getpid()) if pid not in self._before and self._ours(pid)]
        if self.token:
            roots += [pid for pid in processes.marked(MARK, self.token) if pid != os.getpid()]
        killed = processes.kill_tree(roots)
        if self.popen:
            self.popen.wait()
        processes.gone(killed)
        for pid in roots:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass

    def _ours(self, pid: int) -> bool:
        """A child of the grader started during the run that is not someone else's (no other run's mark)."""
        proc = processes.process(pid)
        try:
            return proc is not None and proc.create_time() >= self._since and proc.environ().get(MARK) in (self.token, None)
        except Exception:
            return False
