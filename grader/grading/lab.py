"""The bench a check works at: the only way a check reaches the student's code.

A check sees plain data: a tool call's `Result` (text and is_error), an `AgentRun` (the
messages, the model calls, the answer or the exception), files on disk under `lab.tmp`.
This keeps every verdict in the grader's hands: the student's code runs in a worker process
(grader.boundary.worker) that answers each call with data, and the checks judge it here.
"""
from __future__ import annotations

import json
import os
import re
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grader.boundary.safe_files import Pinned, Refused
from grader.course import kit
from grader.grading.verdict import (  # noqa: F401  (the checks take the verdict's names from the bench they work at)
    MESSAGE_LIMIT, AgentRun, CheckFailed, Raised, Result, StudentCrashed, excerpt, expect, result_text, settle, tool_results)

if TYPE_CHECKING:
    from grader.boundary.stopwatch import Lap

NOT_WRITTEN = re.compile(r"The \w+ tool is not written yet \((.*)\)\.", re.DOTALL)  # rover.tools.execute's words for a stub
TEST_RUN = ("-m", "pytest", "-v", "-p", "no:cacheprovider")  # the scenarios' test run: the side's runs of it on the same files share one
TREE_EVERY = 0.005  # seconds between two listings of the worker's tree while a call's memory is sampled (every 0.5 ms)


class Lab:
    """One check's bench: the workspace under test, a fresh directory to work in, and the worker that runs the code.

    Every call into the student's code is a request to the worker (grader.boundary.proxy), answered
    with data that is checked here before a check sees it, on the check's clock. `Lab.in_process`
    (authoring tests, benchmarks) runs the same harness in this very process instead: no sandbox at all.
    """

    def __init__(self, workspace: Path, tmp: Path, worker: Any, clock: Any = None, stopping: Any = None, temp: Path | None = None):
        if worker is None:
            raise TypeError("a Lab needs a worker; Lab.in_process(...) runs the student's code here, without a sandbox")
        self.workspace = workspace
        # lab.tmp and lab.temp_dir are the student's to write too: the grader reads and writes them only through
        # `files` and `temp_files` (grader.boundary.safe_files), walked from fds pinned when they were made.
        self.files = Files(tmp if isinstance(tmp, Pinned) else Pinned.open(tmp))
        self.tmp = self.files.path
        # The student's code's TMPDIR, this check's alone; in process (authoring tests), this process's own.
        self.temp_files = Files(temp if isinstance(temp, Pinned) else Pinned.open(temp or Path(tempfile.gettempdir())))
        self.temp_dir = self.temp_files.path
        self._worker = worker
        self._clock = clock
        self._stopping = stopping or threading.Event()

    @classmethod
    def in_process(cls, workspace: Path, tmp: Path) -> Lab:
        """A bench that calls the student's code in this very process: no isolation, for authoring tests only."""
        from grader.grading.inprocess import InProcess

        return cls(workspace, tmp, InProcess(workspace))

    # --- files, made and inspected by the grader itself ---------------------------------------

    def pinned(self, folder: Path) -> Files:
        """Another folder the check made in the run folder, pinned now and walked as `files` is (the check closes it)."""
        return Files(Pinned.open(folder))

    def file(self, name: str, content: str | bytes) -> Path:
        """A new file under lab.tmp, created (O_EXCL, O_NOFOLLOW) after removing whatever was planted there."""
        self._live()
        return self.files.write_bytes(name, content.encode("utf-8") if isinstance(content, str) else content)

    def stash(self) -> Path:
        """A fresh copy of pristine stash, the repo every scenario works on."""
        self._live()
        return self.files.copy_in(kit.root() / "stash", "stash", skip=("__pycache__", ".pytest_cache"))

    def close(self) -> None:
        """Let go of the pinned folders (the runner removes them)."""
        self.files.close()
        self.temp_files.close()

    # --- the student's processes, seen from outside ------------------------------------------

    def running(self, pid: int) -> bool:
        """Is the process the student's code knows as `pid` still running? (Inside a sandbox its pids are its own;
        a pid that is not one of the student's processes is never looked at, so the code cannot point us elsewhere.)"""
        return self._worker.running(pid)

    def kill(self, pid: int) -> None:
        """Kill the student's process `pid` (as its code numbers it), and nothing that is not the student's."""
        self._worker.kill(pid)

    def outlives(self, pid: int, seconds: float) -> bool:
        """Is the student's process `pid` still running, and asleep, after `seconds` of the machine's time? A killed
        process is runnable until it gets a CPU to end on, and the time the machine holds it back does not count;
        TooBusy if it is still runnable at the backstop (clocks.BACKSTOP times `seconds`)."""
        from grader.boundary.clocks import BACKSTOP
        from grader.boundary.stopwatch import Stopwatch, TooBusy

        watch = Stopwatch(self._clock)
        while self.running(pid):
            lap = watch.lap()
            if lap.own >= seconds and not self._worker.runnable(pid):
                return True
            if lap.wall >= seconds * BACKSTOP:
                raise TooBusy()
            time.sleep(0.05)
        return False

    # --- calls into the student's code ----------------------------------------------------------

    def tool(self, name: str, open_stdin: bool = False, within: Path | None = None, **args: Any) -> Result:
        """Call a tool through the student's registry, as the model would; `open_stdin`: with the worker's stdin a pipe
        that stays open (a command that inherits it would wait on it), not /dev/null; `within`: another working
        directory than lab.tmp (one the check made under it)."""
        cwd = str(within if within is not None else self.tmp)
        data = self._ask("tool", name=name, args=args, cwd=cwd, **({"open_stdin": True} if open_stdin else {}))
        text, is_error = (data.get("text"), data.get("is_error")) if isinstance(data, dict) else (None, None)
        expect(type(text) is str and type(is_error) is bool,
               f"{name} should return a result with .text (a str) and .is_error (a bool), got {excerpt(data, 200)}")
        stub = NOT_WRITTEN.fullmatch(text) if is_error else None
        if stub:  # the registry's answer for a run() that raises NotImplementedError: said the same way by every check
            raise CheckFailed(f"not written yet: {stub.group(1)}")
        return Result(text, is_error)

    def ok(self, name: str, **args: Any) -> Result:
        result = self.tool(name, **args)
        expect(not result.is_error, f"{name}({_args(args)}) should succeed, but returned an error: {excerpt(result.text)}")
        return result

    def error(self, name: str, **args: Any) -> Result:
        result = self.tool(name, **args)
        expect(result.is_error, f"{name}({_args(args)}) should be an is_error result, but it succeeded with {excerpt(result.text)}")
        return result

    def timed(self, name: str, open_stdin: bool = False, **args: Any) -> tuple[Result, Lap]:
        """A tool call, and how long it took: a Lap (grader.boundary.stopwatch) that also says how much of that time the
        machine held the code back, so that `lap.late(seconds)` blames the code only for its own slowness."""
        from grader.boundary.stopwatch import Stopwatch

        watch = Stopwatch(self._clock)
        result = self.tool(name, open_stdin, **args)
        return result, watch.lap()

    def measure(self, name: str, **args: Any) -> tuple[Result, int]:
        """A tool call and the extra memory (bytes) it took: the peak over before of what the student's Python code
        holds in the worker and in every Python process it forks or starts (processes.code_memory).

        Measured from outside (psutil), sampled all through the call. Anonymous memory is what the code holds
        (a file mapped with mmap is the page cache's, not the tool's, so it does not count). The call runs once unmeasured,
        so what is paid once (imports at the top of a module or inside a function, first-use caches) never counts
        against the call, then twice measured: the smaller peak is the call's (a sample taken as the code forks sees the
        parent's pages in both processes, once in a while: 6 MB for lesson 2's solution in one CI rehearsal).
        """
        if hasattr(self._worker, "measure"):  # in process: tracemalloc, not the tree
            return self._worker.measure(lambda: self.tool(name, **args))
        from grader.boundary.processes import code_memory

        self.tool(name, **args)
        tree = _Recent(lambda: self._worker.tree(below=True), TREE_EVERY)
        memory = lambda: code_memory(tree(), self._worker.pid)  # noqa: E731
        ceiling = lambda: code_memory(tree(), self._worker.pid, ceiling=True)  # noqa: E731
        peaks = []
        for _ in range(2):  # the smaller of two: a sample taken as the code forks can count the parent's pages twice
            self._ask("tool", name=name, settle=True)
            before = memory()
            with _Sampler(memory, ceiling) as sampler:
                result = self.tool(name, **args)
            peaks.append(max(0, sampler.peak - before))
        return result, min(peaks)

    def schemas(self) -> list[dict]:
        """The tool definitions the student's registry offers."""
        found = self._ask("schemas")
        expect(isinstance(found, list) and all(isinstance(tool, dict) for tool in found),
               f"schemas() should return a list of tool definitions (dicts), got {excerpt(found, 200)}")
        return found

    def call(self, module: str, function: str, *args: Any) -> Any:
        """Call one of the workspace's seams (`rover.gate.decide`, ...) with JSON data; the answer as JSON data."""
        return self._ask("call", module=module, function=function, args=list(args))

    def run_agent(self, turns: list[dict], task: str, cwd: Path | None = None, max_turns: int = 30, spy: bool = False,
                  may_raise: bool = False, display: bool = False) -> AgentRun:
        """The student's Agent on a scripted model (the grader's own) for one task.

        An exception out of `run` ends the check as an error, unless `may_raise` (then it is in `run.raised`);
        the scripted model's own ScriptError (the loop left the script) is always returned, never raised.
        """
        from grader.grading.scripted import ScriptedModel

        run, model = AgentRun(cwd or self.tmp), ScriptedModel(turns)
        nonce = os.urandom(6).hex() if spy else False
        spied: list[dict] = []
        data = self._ask("run_agent", task=task, cwd=str(run.cwd), max_turns=max_turns, spy=nonce, display=display, on_model=model.serve,
                         on_spy=lambda args: len(spied) < 1000 and spied.append(args if isinstance(args, dict) else {}))
        expect(isinstance(data, dict), f"the agent's run came back as {excerpt(data, 100)}, not as a run")
        run.answer = data.get("answer")
        # The evidence is the grader's own: what its model was sent and said, and the spy calls told to it as they ran;
        # never the messages or calls the worker reports.
        run.calls, run.messages, run.spy_calls = model.calls, model.messages(), spied
        shown = data.get("shown")  # the display's events can only come from the worker: judged as a claim, checked for shape
        run.shown = [event for event in shown if isinstance(event, dict)] if isinstance(shown, list) else []
        if spy:
            from grader.grading.spy import untouched

            untouched(run, model, nonce)
        raised = data.get("raised")
        if model.error:  # the loop left the script, whatever the worker reports (or hides) about it
            run.raised = Raised("ScriptError", model.error, "", True)
        elif isinstance(raised, dict) and raised.get("type") != "ScriptError":
            run.raised = Raised(str(raised.get("type")), str(raised.get("message")), str(raised.get("where") or ""))
        settle(run, may_raise)
        return run

    def scenario(self, lesson: int) -> AgentRun:
        """Replay lesson N's scripted scenario on a fresh stash; the run, after checking it kept to the script."""
        turns = json.loads(kit.lesson(lesson).script.read_text(encoding="utf-8"))["turns"]
        run = self.run_agent(turns, kit.lesson(lesson).scenario, cwd=self.stash())
        if run.raised and run.raised.from_script:
            raise CheckFailed(f"the scripted scenario went off course: {run.raised.message}")
        expect(run.raised is None, f"the scenario's run raised {run.raised and run.raised.type}: {excerpt(run.raised and run.raised.message)}")
        expect(len(run.calls) == len(turns), f"the loop stopped after {len(run.calls)} of the script's {len(turns)} turns")
        return run

    # --- the wire -------------------------------------------------------------------------------

    def _ask(self, op: str, **fields: Any) -> Any:
        """One request to the worker; its `ok` data, or the student's exception raised as the check's end."""
        self._live()
        answer = self._worker.request(op, self._clock, self._stopping, tempdir=str(self.temp_dir), **fields)
        if "ok" in answer:
            return answer["ok"]
        if "bad" in answer:
            raise CheckFailed(str(answer["bad"])[:MESSAGE_LIMIT])
        raised = answer["raised"] if isinstance(answer["raised"], dict) else {}
        settle(AgentRun(self.tmp, raised=Raised(str(raised.get("type")), str(raised.get("message")), str(raised.get("where") or ""))), False)
        raise StudentCrashed("the worker reported an exception without saying which")

    def _live(self) -> None:
        if self._stopping.is_set():
            from grader.boundary.proxy import Stopped

            raise Stopped()


class Files:
    """A pinned folder as a check uses it: the boundary's refusal (a planted link, a FIFO, a file too large to read)
    is the check's failure, said in the boundary's words."""

    def __init__(self, pinned: Pinned):
        self._pinned = pinned

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._pinned, name)
        if not callable(found):
            return found

        def refused_fails(*args: Any, **kwargs: Any) -> Any:
            try:
                return found(*args, **kwargs)
            except Refused as refusal:
                raise CheckFailed(str(refusal)) from None

        return refused_fails


class _Recent:
    """read(), read again only once `seconds` have passed since: the worker's tree for the sampler, which listed it
    anew at every sample (half a sample's cost); a process started since is seen within `seconds`."""

    def __init__(self, read, seconds: float):
        self.read, self.seconds, self._at, self._value = read, seconds, -seconds, None

    def __call__(self):
        now = time.monotonic()
        if now - self._at >= self.seconds:
            self._value, self._at = self.read(), now
        return self._value


class _Sampler:
    """Reads a memory figure over and over on a thread of its own until the block ends; keeps the largest. With a
    `ceiling` (a cheap figure never below the exact one), the exact reading is taken only when the ceiling is above
    the peak so far: the same peak, at a fraction of the cost (smaps_rollup walks every mapping of a process)."""

    def __init__(self, read, ceiling=None):
        self.read, self.ceiling, self.peak = read, ceiling, 0
        self._done = threading.Event()

    def __enter__(self) -> _Sampler:
        self.peak = self.read()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._done.wait(0.0005):
            try:
                if self.ceiling is None or self.ceiling() > self.peak:
                    self.peak = max(self.peak, self.read())
            except OSError:  # the worker is gone: the call's own answer says why
                return

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()
        try:
            self.peak = max(self.peak, self.read())
        except OSError:
            pass


def _args(args: dict) -> str:
    shown = {key: repr(value) if len(repr(value)) <= 40 else repr(value)[:36] + "...'" for key, value in args.items()}
    return ", ".join(f"{key}={value}" for key, value in shown.items())
