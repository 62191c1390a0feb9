"""Rover against the real anthropic client: a fake server on 127.0.0.1 and httpx2.MockTransport. No key, no network."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fake_api import FakeMessagesAPI, message
from tests.warm_rover import WarmRover

READ_CALL = {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "stash/extract.py"}}


@pytest.fixture
def api():
    server = FakeMessagesAPI()
    yield server
    server.close()


@pytest.fixture
def solved(workspace):
    return workspace(4, solved=True)


pytestmark = pytest.mark.xdist_group("anthropic")  # with test_relay.py: one worker imports the SDK, for both
WARM: list[WarmRover] = []  # the session's helper (conftest's warm_rover), while this module's tests run


@pytest.fixture(scope="module", autouse=True)
def warm(warm_rover):
    WARM.append(warm_rover)
    yield
    WARM.pop()


def rover(root, *args: str, env: dict | None = None, timeout: int = 60, real: bool = False):
    """python -m rover in a workspace, as a student runs it, with a clean environment. A live run (a key in `env`) is
    forked from a helper that has the SDK imported (tests.warm_rover), unless `real`."""
    clean = {"PATH": "/usr/bin:/bin", "HOME": str(root), "PYTHONDONTWRITEBYTECODE": "1", **(env or {})}
    if "ANTHROPIC_API_KEY" in clean and not real:
        return WARM[-1].run(root, args, clean, timeout)
    return subprocess.run([sys.executable, "-m", "rover", *args], cwd=root, env=clean, capture_output=True, text=True, timeout=timeout)


def live_env(api) -> dict:
    return {"ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": api.url, "COLUMNS": "120"}


def test_a_live_run_sends_the_tools_and_shows_the_transcript(api, solved):
    api.reply({"type": "text", "text": "Reading it."}, READ_CALL, stop="tool_use",
              usage={"input_tokens": 1200, "output_tokens": 40, "cache_read_input_tokens": 300})
    api.reply({"type": "text", "text": "parse_date lacks %z."})
    done = rover(solved, "why does parse_date fail?", "--model", "claude-test", env=live_env(api), real=True)  # as a student does
    assert done.returncode == 0, done.stderr
    first = api.requests[0]["body"]
    assert first["model"] == "claude-test" and first["max_tokens"] == 8192
    assert [tool["name"] for tool in first["tools"]] == ["ls", "read", "bash", "edit", "write"]
    assert "write only to create new files" in first["system"][0]["text"]
    assert first["system"][0]["cache_control"] == {"type": "ephemeral"}, "the system prompt is cached"
    assert first["tools"][-1]["cache_control"] == {"type": "ephemeral"} and "cache_control" not in first["tools"][0]
    assert api.requests[1]["body"]["messages"][-1]["content"][0]["tool_use_id"] == "toolu_1"
    assert "• Read stash/extract.py (22 lines)" in done.stdout
    assert "in 1,200 · out 40 · cached 300" in done.stdout and "$" in done.stdout
    assert "parse_date lacks %z." in done.stdout


def test_the_model_comes_from_rover_model(api, solved):
    api.reply({"type": "text", "text": "ok"})
    assert rover(solved, "hi", env={**live_env(api), "ROVER_MODEL": "claude-from-env"}).returncode == 0
    assert api.requests[0]["body"]["model"] == "claude-from-env"


def test_the_default_model(api, solved):
    api.reply({"type": "text", "text": "ok"})
    assert rover(solved, "hi", env=live_env(api)).returncode == 0
    assert api.requests[0]["body"]["model"] == "claude-sonnet-5-5"


def test_an_overloaded_api_is_retried_with_a_visible_line(api, solved):
    api.fail(529, "overloaded_error", "Overloaded", headers={"retry-after-ms": "10"})
    api.reply({"type": "text", "text": "done after a retry"})
    done = rover(solved, "hi", env=live_env(api))
    assert done.returncode == 0, done.stderr
    assert "↻ the API answered 529; retrying in 0.0 s" in done.stdout
    assert "done after a retry" in done.stdout and len(api.requests) == 2


@pytest.mark.parametrize(("status", "kind", "expected"), [
    (401, "authentication_error", "rover: the API rejected the key (401): check ANTHROPIC_API_KEY"),
    (404, "not_found_error", "rover: the API does not know that model (404): model: claude-nope."),
])
def test_api_failures_are_one_line(api, solved, status, kind, expected):
    api.fail(status, kind, "model: claude-nope" if status == 404 else "invalid x-api-key")
    done = rover(solved, "hi", "--model", "claude-nope", env=live_env(api))
    assert done.returncode == 1
    assert done.stderr.startswith(expected) and done.stderr.count("\n") == 1, done.stderr


def test_no_server_listening_is_one_line(solved):
    done = rover(solved, "hi", env={"ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"})
    assert done.returncode == 1
    assert done.stderr == "rover: could not reach the API: check the network, or ANTHROPIC_BASE_URL if you set it.\n"
    assert "retrying" in done.stdout


def test_no_key_and_no_script_is_one_line_exit_2(solved):
    done = rover(solved, "hi")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "ANTHROPIC_API_KEY" in done.stderr and "scripted:" in done.stderr


def test_a_missing_script_is_one_line_exit_2(solved):
    done = rover(solved, "hi", "--model", "scripted:nope.json")
    assert done.returncode == 2 and done.stderr == "rover: no script at nope.json; give --model scripted:FILE.json with a file that exists.\n"


def test_a_recorded_live_run_replays_offline(api, solved, tmp_path):
    api.reply(READ_CALL, stop="tool_use")
    api.reply({"type": "text", "text": "Seen it."})
    script, first, second = tmp_path / "run.json", tmp_path / "live.json", tmp_path / "replay.json"
    assert rover(solved, "look", "--record", str(script), "--transcript", str(first), env=live_env(api)).returncode == 0
    turns = json.loads(script.read_text())["turns"]
    assert turns[1]["expect"].startswith("1\t") and turns[0]["stop_reason"] == "tool_use"
    assert rover(solved, "look", "--model", f"scripted:{script}", "--transcript", str(second)).returncode == 0
    live, replayed = json.loads(first.read_text()), json.loads(second.read_text())
    assert live["messages"] == replayed["messages"]
    assert [request["messages"] for request in live["requests"]] == [request["messages"] for request in replayed["requests"]]
    assert [request["usage"] for request in live["requests"]] == [request["usage"] for request in replayed["requests"]]


def test_the_sdk_path_without_a_server_via_mock_transport(solved_rover, tmp_path):
    import anthropic
    import httpx2

    from rover.agent import Agent
    from rover.live import AnthropicModel

    seen = []

    def handle(request: httpx2.Request) -> httpx2.Response:
        seen.append(json.loads(request.content))
        if len(seen) == 1:
            return httpx2.Response(200, json=message([{"type": "tool_use", "id": "t1", "name": "write",
                                                       "input": {"path": "a.py", "content": "x = 1"}}], stop="max_tokens"))
        return httpx2.Response(200, json=message([{"type": "text", "text": "resent smaller"}]))

    client = anthropic.Anthropic(api_key="sk-test", http_client=httpx2.Client(transport=httpx2.MockTransport(handle)))
    agent = Agent(AnthropicModel("claude-test", client=client), tmp_path)
    assert agent.run("write a.py") == "resent smaller"
    assert not (tmp_path / "a.py").exists(), "a tool call from a max_tokens reply must not run"
    result = seen[1]["messages"][-1]["content"][0]
    assert result["is_error"] and "max_tokens" in result["content"]


def test_a_scripted_run_never_imports_the_sdk(solved):
    probe = "import sys, runpy; sys.argv = ['rover', 'list', '--model', 'scripted:scenarios/lesson-0.json', '--quiet']\n" \
            "try:\n    runpy.run_module('rover', run_name='__main__')\nexcept SystemExit:\n    pass\nprint('anthropic' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], cwd=solved, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip().endswith("False"), done.stdout + done.stderr


def test_ctrl_c_saves_the_transcript_and_stops_the_command(solved, tmp_path):
    import signal
    import time

    script = tmp_path / "slow.json"
    script.write_text(json.dumps({"turns": [
        {"content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "echo $$ > ../bash.pid; sleep 60"}}],
         "stop_reason": "tool_use"},
        {"content": [{"type": "text", "text": "never reached"}], "stop_reason": "end_turn"},
    ]}))
    transcript = tmp_path / "t.json"
    process = subprocess.Popen([sys.executable, "-m", "rover", "wait", "--model", f"scripted:{script}", "--transcript", str(transcript)],
                               cwd=solved, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    while not (solved / "bash.pid").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=20)
    assert process.returncode == 130
    assert err == f"rover: interrupted; the conversation so far is in {transcript}\n"
    assert [message["role"] for message in json.loads(transcript.read_text())["messages"]] == ["user", "assistant"]
    pid = int((solved / "bash.pid").read_text())
    time.sleep(0.2)
    try:
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        state = "gone"
    assert state in ("gone", "Z"), "the command Rover was running should be killed with it"


@pytest.mark.parametrize(("script", "problem"), [
    ([], 'the top level should be an object holding a "turns" list'),
    ({"turns": 5}, 'the top level should be an object holding a "turns" list'),
    ({"turns": [{"content": "hello", "stop_reason": "end_turn"}]}, "turn 1: content should be a list of blocks"),
    ({"turns": [{"content": [{"type": "text", "text": "hi"}], "stop_reason": 3}]}, "turn 1: stop_reason should be a string"),
    ("{not json", "Expecting property name"),
])
def test_a_script_of_the_wrong_shape_is_one_line_exit_2(solved, tmp_path, script, problem):
    path = tmp_path / "bad.json"
    path.write_text(script if isinstance(script, str) else json.dumps(script))
    done = rover(solved, "hi", "--model", f"scripted:{path}")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"rover: {path} is not a script (") and problem in done.stderr


@pytest.mark.parametrize("option", ["--transcript", "--record"])
def test_saving_into_a_missing_folder_is_refused_before_the_run(solved, tmp_path, option):
    done = rover(solved, "list", "--model", "scripted:scenarios/lesson-0.json", option, str(tmp_path / "nowhere" / "t.json"))
    assert done.returncode == 2 and done.stdout == "", "nothing ran"
    assert done.stderr == f"rover: {option} {tmp_path / 'nowhere' / 't.json'}: the folder {tmp_path / 'nowhere'} does not exist; make it first, or save elsewhere.\n"


@pytest.mark.parametrize("args", [["--max-turns", "0", "hi"], ["--max-turns", "-1", "hi"], ["--max-turns", "many", "hi"], [], ["hi", "--bogus"]])
def test_usage_errors_are_one_line_exit_2(solved, args):
    done = rover(solved, *args, "--model", "scripted:scenarios/lesson-0.json")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("rover: ") and done.stderr.count("\n") == 1 and "--help` lists the options" in done.stderr, done.stderr


def test_rover_outside_a_workspace_says_where_to_go(solved, tmp_path):
    elsewhere = rover(tmp_path, "hi")
    assert elsewhere.returncode == 2 and elsewhere.stderr.count("\n") == 1
    assert "not a Rover workspace" in elsewhere.stderr and "workshop start lesson-0" in elsewhere.stderr
    inside = rover(solved / "stash", "hi")
    assert inside.returncode == 2 and f"`cd {solved}`" in inside.stderr, inside.stderr


def test_a_replay_on_a_changed_stash_says_so_in_one_line(solved):
    from grader.course import git

    git.run(solved, "init", "-q")
    git.save(solved, "Start lesson 4")
    with_pytest = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    first = rover(solved, "fix it", "--model", "scripted:scenarios/lesson-3.json", env=with_pytest)
    assert first.returncode == 0, first.stderr
    again = rover(solved, "fix it", "--model", "scripted:scenarios/lesson-3.json", env=with_pytest)
    assert again.returncode == 1 and again.stderr.count("\n") == 1, again.stderr
    assert again.stderr.endswith("stash has changed: `workshop reset stash`, or use `workshop demo`\n")


def test_quiet_tokens_leaves_one_total_at_the_end(api, solved):
    usage = {"input_tokens": 1200, "output_tokens": 40}
    api.reply(READ_CALL, stop="tool_use", usage=usage)
    api.reply({"type": "text", "text": "done"}, usage=usage)
    done = rover(solved, "look", "--quiet-tokens", env=live_env(api))
    assert done.returncode == 0, done.stderr
    assert "tokens:" not in done.stdout
    assert done.stdout.rstrip().splitlines()[-1].startswith("tokens over 2 replies: 2,480 ≈ $")


def test_the_transcript_shows_the_tools_own_words_and_diff_context(solved_rover, tmp_path):
    import io

    from rich.console import Console

    from rover.display import Transcript, _fit_rule
    from rover.tools.result import ToolResult

    screen = io.StringIO()
    transcript = Transcript(Console(file=screen, width=120, highlight=False))
    transcript.tool({"name": "write", "input": {"path": "a.txt", "content": "café"}}, ToolResult("Wrote 4 characters to a.txt"))
    diff = "--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,3 @@\n def f():\n-    return 1\n+    return 2\n # end\n"
    transcript.tool({"name": "edit", "input": {"path": "x.py"}}, ToolResult(diff))
    shown = screen.getvalue()
    assert "• Write: Wrote 4 characters to a.txt" in shown and "bytes" not in shown
    assert "   def f():" in shown and "   # end" in shown and "-    return 1" in shown
    rule = "=" * 50 + " 2 failed, 1 passed in 0.12s " + "=" * 50
    fitted = _fit_rule(rule, 118)
    assert len(fitted) <= 118 and fitted.endswith("===") and " 2 failed, 1 passed in 0.12s " in fitted


def test_a_replay_through_unfinished_tools_says_the_tools_differ(workspace):
    from grader.course import git

    root = workspace(1)
    git.run(root, "init", "-q")
    git.save(root, "Start lesson 1")
    done = rover(root, "read it", "--model", "scripted:scenarios/lesson-1.json")
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert "but they began \"The read tool is not written yet" in done.stderr and "your tools answer differently" in done.stderr
