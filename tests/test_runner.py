"""The grader survives whatever student code does: loops, exits, crashes, floods, syntax errors, a hang at import."""
from __future__ import annotations

import os
import signal
import tempfile

import pytest

from grader.course import kit
from grader.grading.runner import run_checks, run_suite

BROKEN_READ = {
    "an endless loop": "def run(cwd, path, offset=1, limit=None):\n    while True:\n        pass\n",
    "sys.exit": "import sys\n\ndef run(cwd, path, offset=1, limit=None):\n    sys.exit(3)\n",
    "os._exit": "import os\n\ndef run(cwd, path, offset=1, limit=None):\n    os._exit(7)\n",
    "a flood of output": "import os\n\ndef run(cwd, path, offset=1, limit=None):\n"
                         "    for _ in range(20000):\n        print('spam ' * 50)\n        os.write(2, b'x' * 500)\n"
                         "    raise ValueError('after the flood')\n",
}


def _break_read(root, body: str) -> None:
    header = (root / "rover/tools/read.py").read_text().split("def run(")[0]
    (root / "rover/tools/read.py").write_text(header + body)


def _read_checks(*ids: str) -> list[kit.Check]:
    return [check for check in kit.lesson(1).checks if check.id in ids]


def test_an_endless_loop_times_out_and_later_checks_still_run(workspace, monkeypatch):
    monkeypatch.setattr("grader.boundary.clocks.BACKSTOP", 1000.0)  # only the CPU budget may end it, however busy the machine
    root = workspace(1)
    _break_read(root, BROKEN_READ["an endless loop"])
    outcomes = run_checks(root, _read_checks("read.numbered", "read.missing"), time_limit=0.5, jobs=1)
    assert [outcome.status for outcome in outcomes] == ["timeout", "timeout"]
    assert "still running after 0.5 s of CPU, at rover/tools/read.py line " in outcomes[0].message
    assert "endless loop" in outcomes[0].message


def test_a_call_that_sleeps_forever_is_a_wait_not_a_busy_machine(workspace):
    root = workspace(1)
    _break_read(root, "import time\n\ndef run(cwd, path, offset=1, limit=None):\n    time.sleep(600)\n")
    [outcome] = run_checks(root, _read_checks("read.numbered"), time_limit=0.5, jobs=1)
    assert outcome.status == "timeout", outcome
    assert outcome.message.startswith("still waiting after 0.5 s, at rover/tools/read.py line "), outcome.message


def test_a_command_that_never_ends_is_named_not_the_tool_s_wait_loop(workspace):
    root = workspace(2, solved=True)
    checks = [check for check in kit.lesson(2).checks if check.id == "bash.output"]
    bash = root / "rover/tools/bash.py"
    bash.write_text(bash.read_text() + "\n_real = run\n\ndef run(cwd, command, timeout=DEFAULT_TIMEOUT):\n"
                    "    return _real(cwd, 'sleep 477', timeout=600)\n")
    [outcome] = run_checks(root, checks[:1], time_limit=0.5, jobs=1)
    assert outcome.status == "timeout" and "`sleep 477`" in outcome.message, outcome


def test_a_machine_too_busy_to_finish_is_an_error_that_asks_for_a_rerun(workspace, monkeypatch):
    """Stopped by the backstop while the code used next to no CPU (it kept wanting one): never a failure."""
    import time

    monkeypatch.setattr("grader.boundary.processes.runnable", lambda procs: True)  # as if starved of CPU, not asleep
    # and waiting in the run queue all along (/proc/PID/schedstat): every second of wall time a second of waiting
    monkeypatch.setattr("grader.boundary.processes.run_wait", lambda procs: {proc.pid: time.monotonic() for proc in procs})
    root = workspace(1)
    _break_read(root, "import time\n\ndef run(cwd, path, offset=1, limit=None):\n    time.sleep(600)\n")
    [outcome] = run_checks(root, _read_checks("read.numbered"), time_limit=0.5, jobs=1)
    assert (outcome.status, outcome.message) == ("error", "the machine was too busy to finish this check; run `workshop check` again")
    assert outcome.busy


@pytest.mark.parametrize("lower", ["os.nice(10)", "open('/proc/self/autogroup', 'w').write('19')"], ids=["nice", "autogroup"])
def test_code_that_lowered_its_own_priority_is_never_a_busy_machine(workspace, monkeypatch, lower):
    """Attack wave 3: at a lowered priority (nice, SCHED_IDLE) a loop waits in the run queue like code on a busy
    machine. bwrap refuses the call (grader.boundary.backends.seccomp); the process sandbox's clock sees it."""
    import time

    monkeypatch.setenv("WORKSHOP_SANDBOX", "process")
    monkeypatch.setattr("grader.boundary.processes.runnable", lambda procs: True)  # starved of CPU, as at a lowered priority
    monkeypatch.setattr("grader.boundary.processes.run_wait", lambda procs: {proc.pid: time.monotonic() for proc in procs})
    root = workspace(1)
    _break_read(root, f"import os, time\n\ndef run(cwd, path, offset=1, limit=None):\n    {lower}\n    time.sleep(600)\n")
    [outcome] = run_checks(root, _read_checks("read.numbered"), time_limit=0.5, jobs=1)
    assert outcome.status == "timeout" and "a priority the code lowered itself" in outcome.message, outcome
    assert "rover/tools/read.py line" in outcome.message and not outcome.busy


def test_a_worker_the_machine_was_too_busy_to_start_is_a_busy_check_not_the_codes(workspace, monkeypatch):
    """A spawned worker imports the rover again (macOS): at a high load its start can reach the backstop."""
    from grader.boundary.clocks import CheckTimeout

    def starved(worker, limit, stopping):
        raise CheckTimeout("busy")

    monkeypatch.setattr("grader.boundary.proxy.Worker.start", starved)
    outcomes = run_checks(workspace(1), _read_checks("read.numbered", "read.offset-limit"), jobs=1)
    assert [outcome.busy for outcome in outcomes] == [True, True], [outcome.message for outcome in outcomes]


def test_wanting_a_cpu_without_waiting_for_one_is_a_timeout_not_a_busy_machine(workspace, monkeypatch):
    """Hole 7: runnable at every look, but next to no run-queue wait: it was not starved, so it is the code's timeout."""
    monkeypatch.setattr("grader.boundary.processes.runnable", lambda procs: True)
    monkeypatch.setattr("grader.boundary.processes.run_wait", lambda procs: {proc.pid: 0.0 for proc in procs})
    root = workspace(1)
    _break_read(root, "import time\n\ndef run(cwd, path, offset=1, limit=None):\n    time.sleep(600)\n")
    [outcome] = run_checks(root, _read_checks("read.numbered"), time_limit=0.5, jobs=1)
    assert outcome.status == "timeout" and outcome.message.startswith("still waiting after 0.5 s"), outcome


def test_sys_exit_is_an_error_that_names_it(workspace):
    root = workspace(1)
    _break_read(root, BROKEN_READ["sys.exit"])
    [outcome] = run_checks(root, _read_checks("read.missing"), jobs=1)
    assert outcome.status == "error"
    assert "sys.exit(3)" in outcome.message


@pytest.mark.parametrize("returned, named", [("'     1\\tx'", "read returned str, expected ToolResult"),
                                              ("{'text': 'x', 'is_error': False}", "read returned dict, expected ToolResult"),
                                              ("ToolResult(None)", "read returned a ToolResult whose .text is NoneType")])
def test_a_tool_that_returns_another_type_is_told_so_with_a_hint_about_that(workspace, returned, named):
    root = workspace(1)
    _break_read(root, f"from rover.tools.result import ToolResult\n\ndef run(cwd, path, offset=1, limit=None):\n    return {returned}\n")
    outcomes = run_checks(root, _read_checks("read.numbered", "read.offset-limit"), jobs=1)
    for outcome in outcomes:
        assert outcome.status == "failed" and outcome.message.startswith(named), outcome
        assert outcome.first_hint.startswith("Every tool's run() returns a ToolResult") and outcome.first_hint != outcome.check.hints[0]


def test_os_exit_kills_only_its_check(workspace):
    root = workspace(1)
    _break_read(root, BROKEN_READ["os._exit"])
    outcomes = run_checks(root, [*_read_checks("read.numbered"), *kit.lesson(0).checks[:1]], jobs=1)
    assert outcomes[0].status == "error" and "exit status 7" in outcomes[0].message
    assert outcomes[1].status == "passed", "the next check runs in a fresh worker"


def test_a_worker_the_kernel_killed_for_want_of_memory_is_said_so_and_graded_again_in_class(workspace, monkeypatch):
    """On a machine out of memory the kernel kills the largest process, maybe an innocent worker: its check is an error
    that names the machine (class grade grades the row again, alone), not "did the code call os._exit"."""
    from grader.classroom import student_run
    from grader.boundary import proxy

    root = workspace(1)
    _break_read(root, "import os, signal\n\ndef run(cwd, path, offset=1, limit=None):\n    os.kill(os.getpid(), signal.SIGKILL)\n")
    [plain] = run_checks(root, _read_checks("read.numbered"), jobs=1)
    assert plain.status == "error" and "killed by signal 9" in plain.message and "os._exit" in plain.message
    counts = iter(range(10, 100))  # the machine's out-of-memory kills, growing while the worker lives
    monkeypatch.setattr(proxy, "oom_kills", lambda: next(counts))
    [outcome] = run_checks(root, _read_checks("read.numbered"), jobs=1)
    assert outcome.status == "error" and "ran out of memory" in outcome.message and "os._exit" not in outcome.message
    assert student_run.doubtful(student_run.Graded(1, [outcome], None, 1.0, 1.0))


def test_code_that_raises_the_grader_s_words_for_a_busy_machine_is_graded_as_code(workspace):
    """Attack wave 7: an exception whose message was the busy machine's sentence made every loop check a 'busy' error
    (never a failure), and class grade graded the row again."""
    from grader.classroom import student_run
    from grader.grading.runner import BUSY

    root = workspace(1)
    agent = root / "rover" / "agent.py"
    agent.write_text(agent.read_text() + f"\n\ndef _run(self, *args, **kwargs):\n    raise MemoryError({BUSY!r})\n\n\nAgent.run = _run\n")
    [outcome] = run_checks(root, kit.lesson(0).checks[:1], jobs=1)
    assert not outcome.passed and not outcome.busy, outcome.message
    assert "too\u00a0busy" in outcome.message, "the code's own words, defused"
    assert not student_run.doubtful(student_run.Graded(1, [outcome], None, 1.0, 1.0))


def test_a_flood_of_output_does_not_drown_the_report(workspace):
    root = workspace(1)
    _break_read(root, BROKEN_READ["a flood of output"])
    [outcome] = run_checks(root, _read_checks("read.numbered"), jobs=1)
    assert outcome.status == "failed"
    assert "after the flood" in outcome.message


def test_a_syntax_error_names_the_file_and_line(workspace):
    root = workspace(1)
    (root / "rover/tools/read.py").write_text("def run(cwd, path:\n    pass\n")
    outcomes = run_checks(root, [*_read_checks("read.numbered"), kit.lesson(0).checks[0]])
    assert all(outcome.status == "error" for outcome in outcomes), "the registry imports read.py, so every check sees it"
    assert "SyntaxError in rover/tools/read.py line 1" in outcomes[0].message


def test_outcomes_keep_the_manifest_order_across_workers(workspace):
    root = workspace(1, solved=True)
    checks = list(kit.lesson(0).checks) + list(kit.lesson(1).checks)
    outcomes = run_checks(root, checks, jobs=2)
    assert [outcome.check.id for outcome in outcomes] == [check.id for check in checks]
    assert all(outcome.passed for outcome in outcomes)


def test_a_hanging_import_is_one_root_cause_with_its_line(workspace, monkeypatch):
    monkeypatch.setattr("grader.grading.runner.IMPORT_LIMIT", 0.5)
    monkeypatch.setattr("grader.boundary.clocks.BACKSTOP", 1000.0)  # only the CPU budget may end it, however busy the machine
    root = workspace(1, solved=True)
    (root / "rover/tools/read.py").write_text((root / "rover/tools/read.py").read_text() + "\nwhile True:\n    pass\n")
    seen = []
    suite = run_suite(root, list(kit.lesson(0).checks) + list(kit.lesson(1).checks), on_outcome=seen.append)
    assert seen == [], "one import clock, and no check started after it ran out"
    assert suite.root_cause and "rover/tools/read.py line" in suite.root_cause
    assert {outcome.status for outcome in suite.outcomes} == {"error"}
    assert all(suite.root_cause in outcome.message for outcome in suite.outcomes)


def test_each_outcome_is_handed_over_as_it_lands(workspace):
    root = workspace(1, solved=True)
    seen = []
    outcomes = run_checks(root, list(kit.lesson(1).checks), on_outcome=seen.append)
    assert sorted(outcome.check.id for outcome in seen) == sorted(outcome.check.id for outcome in outcomes)
    assert run_suite(root, list(kit.lesson(1).checks)).root_cause is None


def test_the_run_leaves_no_temp_file_and_spares_processes_it_did_not_start(workspace, tmp_path, monkeypatch):
    import os
    import subprocess
    import tempfile

    root = workspace(2, solved=True)
    temp = tmp_path / "tmpdir"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    monkeypatch.setattr(tempfile, "tempdir", None)
    bystander = subprocess.Popen(["sleep", "30"])  # the host's own child, started before the run
    try:
        outcomes = run_checks(root, [check for check in kit.lesson(2).checks if check.id in ("bash.background", "bash.tail-bytes")])
        assert all(outcome.passed for outcome in outcomes), outcomes
        assert bystander.poll() is None, "the sweep must not touch processes the grader did not start"
        assert os.listdir(temp) == [], "every temp file (the bash tool's spill files included) goes with the run folder"
    finally:
        bystander.kill()
        bystander.wait()


def test_memory_is_the_call_s_own_not_the_imports(workspace):
    """A legal heavy import, at the top of a tool or inside its run(), is paid once and never counted against a call."""
    root = workspace(2, solved=True)
    read, bash = root / "rover/tools/read.py", root / "rover/tools/bash.py"
    read.write_text(read.read_text().replace("from pathlib import Path\n", "from pathlib import Path\nimport asyncio  # heavy, and legal\n", 1))
    lazy = "def run(cwd: Path, command: str, timeout: float = DEFAULT_TIMEOUT) -> ToolResult:\n"
    assert lazy in bash.read_text()
    bash.write_text(bash.read_text().replace(lazy, lazy + "    import asyncio, decimal, email.mime.multipart, http.client  # lazy\n"))
    memory = [check for check in (*kit.lesson(1).checks, *kit.lesson(2).checks) if check.id.endswith("bounded-memory")]
    outcomes = run_checks(root, memory)
    assert [outcome.status for outcome in outcomes] == ["passed", "passed"], [outcome.message for outcome in outcomes]


def test_a_grader_started_with_hangup_ignored_gives_the_code_default_signals(workspace):
    """Under `nohup` (or a runner that ignores SIGHUP) the ignored signal was inherited by the student's commands: the
    reference bash tool then 'succeeded' on `kill -1 $$`. The side starts with the usual signals at their default."""
    import json
    import signal
    import subprocess
    import sys

    root = workspace(2, solved=True)
    grader = ("import json, sys\nfrom grader.course import kit\nfrom grader.grading.runner import run_checks\n"
              "check = [check for check in kit.lesson(2).checks if check.id == 'bash.signal']\n"
              "print(json.dumps([[o.status, o.message] for _ in range(3) for o in run_checks(sys.argv[1], check, jobs=1)]))")
    done = subprocess.run([sys.executable, "-c", grader, str(root)], capture_output=True, text=True,  # bash.signal draws HUP or USR1 each time
                          preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN), timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    for status, message in json.loads(done.stdout):
        assert status == "passed", message


def test_a_clean_up_after_the_clock_ran_out_keeps_the_timeout(workspace):
    """gate.stash-scenario restores the person's answers in a `finally`. When the scenario's clock ran out, that second
    call reached a worker still running the agent, which then asked the model: the check said "the worker asked the
    model outside a run of the agent" instead of the timeout. A worker whose call ran out answers every later request
    with that timeout."""
    root = workspace(6, solved=True)
    bash = root / "rover/tools/bash.py"
    bash.write_text(bash.read_text() + "\n_real = run\n\ndef run(cwd, command, timeout=DEFAULT_TIMEOUT):\n"
                    "    if 'pytest' in command:\n        import time\n        time.sleep(0.8)\n"
                    "    return _real(cwd, command, timeout)\n")
    [outcome] = run_checks(root, [check for check in kit.lesson(6).checks if check.id == "gate.stash-scenario"], time_limit=0.5, jobs=1)
    assert outcome.status == "timeout" and outcome.message.startswith("still waiting after 0.5 s"), outcome


def test_a_ctrl_c_while_the_lanes_start_ends_the_run_as_an_interrupt(workspace, monkeypatch):
    """A rehearsal's Ctrl-C landed between two lanes' start(): the clean-up joined a lane never started, and the check
    ended with a RuntimeError traceback and exit 1 instead of 130."""
    import threading

    from grader.boundary.runfolder import PREFIX

    root = workspace(1, solved=True)
    real, lanes = threading.Thread.start, []

    def start(thread):
        if getattr(thread, "_target", None) is not None and thread._target.__name__ == "_lane":
            lanes.append(thread)
            if len(lanes) == 2:
                raise KeyboardInterrupt
        real(thread)

    monkeypatch.setattr(threading.Thread, "start", start)
    before = signal.getsignal(signal.SIGINT)
    try:
        with pytest.raises(KeyboardInterrupt):
            run_checks(root, kit.lesson(1).checks, jobs=4)
    finally:
        signal.signal(signal.SIGINT, before)
    assert len(lanes) == 2 and not any(lane.is_alive() for lane in lanes)
    assert not [name for name in os.listdir(tempfile.gettempdir()) if name.startswith(PREFIX)]
