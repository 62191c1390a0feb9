"""The transcript: what `python -m rover --transcript` records, and the page `workshop transcript` draws from it."""
from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from grader.cli import main as workshop
from grader.course import kit
from grader.transcripts.chart import input_tokens, segments, share_out
from grader.transcripts.load import NotATranscript, load
from grader.transcripts.page import render
from grader.transcripts.turns import SHOW_CHARS


def record(solved_rover, lesson: int, tmp_path: Path, *options: str, script: Path | None = None) -> tuple[Path, str]:
    """Lesson `lesson`'s scenario replayed through the reference Rover on a fresh stash, recorded; (file, screen)."""
    from rover.__main__ import main

    stash = tmp_path / f"stash-{lesson}-{len(list(tmp_path.glob('stash-*')))}"
    shutil.copytree(kit.root() / "stash", stash, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    script = script or kit.lesson(lesson).script
    answers = json.loads(script.read_text(encoding="utf-8")).get("answers", ["y"])
    os.environ.update({"ROVER_ANSWERS": ",".join(answers), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
                       "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]})
    transcript = stash.with_suffix(".json")
    import contextlib
    import io

    screen = io.StringIO()
    with contextlib.redirect_stdout(screen):
        code = main([kit.lesson(lesson).scenario, "--model", f"scripted:{script}", "--cwd", str(stash),
                     "--transcript", str(transcript), *options])
    assert code == 0, screen.getvalue()[-2000:]
    return transcript, screen.getvalue()


@pytest.fixture
def env_kept(monkeypatch):
    """record() sets ROVER_ANSWERS, PATH and PYTEST_DISABLE_PLUGIN_AUTOLOAD; put them back after the test."""
    for name in ("ROVER_ANSWERS", "PATH", "PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        monkeypatch.setenv(name, os.environ.get(name, ""))


def test_the_file_records_each_request_as_sent_and_round_trips(solved_rover, env_kept, tmp_path):
    transcript, _ = record(solved_rover, 3, tmp_path)
    saved = json.loads(transcript.read_text())
    assert (saved["format"], saved["version"]) == ("rover-transcript", 2)
    scenario = json.loads(kit.lesson(3).script.read_text())["turns"]
    assert [request["usage"] for request in saved["requests"]] == [turn["usage"] for turn in scenario]
    assert [len(request["messages"]) for request in saved["requests"]] == [1, 3, 5, 7]
    assert [request["reply"]["content"] for request in saved["requests"]] == [turn["content"] for turn in scenario]
    edit = saved["requests"][1]["tool_calls"][0]
    assert edit["name"] == "edit" and not edit["is_error"] and "Replaced" not in edit["result"]
    assert '-    formats = ["%a, %d %b %Y %H:%M:%S", "%Y-%m-%dT%H:%M:%S"]' in edit["diff"].splitlines()
    assert '+        "%a, %d %b %Y %H:%M:%S %z",' in edit["diff"].splitlines()
    assert saved["requests"][2]["tool_calls"][0]["diff"] is None, "only edit and write keep a diff"
    assert all(request["seconds"] >= 0 and request["tools_chars"] > 1000 for request in saved["requests"])
    run = load(transcript)
    assert [request.messages for request in run.requests] == [request["messages"] for request in saved["requests"]]
    assert run.system == saved["system"] and run.tools == saved["tools"] and not run.estimated


def test_a_trimmed_request_is_recorded_as_sent_and_drawn_as_stubs(solved_rover, env_kept, tmp_path):
    transcript, _ = record(solved_rover, 8, tmp_path)
    run = load(transcript)
    sent = [json.dumps(request.messages) for request in run.requests]
    assert "[elided" not in sent[5] and "[elided" in sent[-1], "the late requests carry lesson 8's stubs"
    first: dict[str, str] = {}
    kinds = [{segment.kind for segment in segments(run, request, first)} for request in run.requests]
    assert "stub" not in kinds[5] and "stub" in kinds[-1]
    page = render([run])
    assert "as its stub" in page and "from request" in page


@pytest.mark.parametrize("lesson", range(len(kit.lessons())))
def test_the_segments_sum_to_the_reported_input_on_every_request(solved_rover, env_kept, tmp_path, lesson):
    run = load(record(solved_rover, lesson, tmp_path)[0])
    first: dict[str, str] = {}
    assert run.requests
    for number, request in enumerate(run.requests, 1):
        shares = segments(run, request, first)
        assert sum(segment.tokens for segment in shares) == input_tokens(request) > 0, f"request {number}"
        assert all(segment.tokens >= 0 for segment in shares)


def test_share_out_is_whole_and_exact():
    assert share_out(10, [1, 1, 1]) == [4, 3, 3]
    assert share_out(0, [5, 5]) == [0, 0] and share_out(7, [0, 0]) == [7, 0] and share_out(3, []) == []
    assert sum(share_out(12_345, [17, 1, 999, 3, 0, 40])) == 12_345


def test_the_bar_under_each_turn_fits_80_columns_and_quiet_tokens_drops_it(solved_rover, env_kept, tmp_path):
    _, screen = record(solved_rover, 8, tmp_path)
    bars = [line for line in screen.splitlines() if line.startswith("  context ")]
    assert len(bars) == 30 and all(len(line) <= 80 for line in bars), max(bars, key=len)
    assert re.fullmatch(r"  context \d+\.\dk ▕[░▒▓█]+▏ (tool results|prompt\+tools|model|task) \d+% · billed \d+\.\dk", bars[-1])
    assert "tokens: " not in screen and "tokens over 30 replies" in screen, "the bar stands in for the token line"
    _, quiet = record(solved_rover, 8, tmp_path, "--quiet-tokens")
    assert "  context " not in quiet and "tokens over 30 replies" in quiet


def test_an_old_messages_only_file_still_opens(tmp_path):
    old = tmp_path / "old.json"
    old.write_text(json.dumps([{"role": "user", "content": "look"},
                               {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {}}]},
                               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.py\nb.py"}]},
                               {"role": "assistant", "content": [{"type": "text", "text": "Two files."}]}]))
    run = load(old)
    assert run.estimated and [len(request.messages) for request in run.requests] == [1, 3]
    done = CliRunner().invoke(workshop, ["transcript", str(old), "--html", str(tmp_path / "old.html"), "--no-open"])
    assert done.exit_code == 0, done.output
    page = (tmp_path / "old.html").read_text()
    assert "Two files." in page and "every figure is estimated" in page


@pytest.mark.parametrize("content, why", [
    (b"not json", "it is not JSON"),
    (b"\x89PNG\r\n\x1a\n\x00\x00", "it is not JSON"),
    (b'{"turns": []}', "it is a script for `--model scripted:`"),
    (b'{"name": "package.json"}', '"format" should be "rover-transcript"'),
    (b'{"format": "rover-transcript", "version": 9, "requests": []}', "version 9 is from a newer kit"),
    (b'{"format": "rover-transcript", "version": 2, "requests": [{"messages": [], "reply": {"content": []}, '
     b'"usage": {"input_tokens": -3}}]}', "requests[0].usage.input_tokens should be a whole number"),
    (b'[{"role": "system", "content": "x"}]', "the message list[0] should be a message"),
    (b"[" * 100_000, "JSON"),
])
def test_a_bad_or_foreign_file_is_one_line_and_exit_2(tmp_path, content, why):
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    done = CliRunner().invoke(workshop, ["transcript", str(bad), "--no-open"])
    assert done.exit_code == 2 and done.output.count("\n") == 1, done.output
    assert done.output.startswith(f"workshop: {bad} ") and why in done.output and "Traceback" not in done.output
    assert not list(tmp_path.glob("*.html"))


def test_a_missing_file_is_one_line_and_exit_2(tmp_path):
    done = CliRunner().invoke(workshop, ["transcript", str(tmp_path / "gone.json")])
    assert done.exit_code == 2 and done.output.count("\n") == 1 and "cannot be read" in done.output


HOSTILE = "</pre><script>alert('x')</script><img src=x onerror=alert(1)>\x00\x07\x1b[31m\u202egnp.exe\ud800 ok"


BIG = "".join(f"line {n}: " + "x" * 90 + "\n" for n in range(10_000))  # a 1 MB tool result


def hostile_file(tmp_path: Path) -> Path:
    big = BIG
    call = {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": HOSTILE}}
    messages = [{"role": "user", "content": HOSTILE}]
    after = [*messages, {"role": "assistant", "content": [call]},
             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": big + HOSTILE}]}]
    requests = [
        {"messages": messages, "reply": {"content": [call], "stop_reason": "tool_use"}, "usage": {"input_tokens": 900},
         "tool_calls": [{"id": "t1", "name": "bash", "input": call["input"], "result": big, "is_error": False,
                         "diff": f"+{HOSTILE}\n-</span></div>"}]},
        {"messages": after, "reply": {"content": [{"type": "text", "text": HOSTILE}], "stop_reason": "end_turn"},
         "usage": {"input_tokens": 251_000, "output_tokens": 5}},
    ]
    text = json.dumps({"format": "rover-transcript", "version": 2, "model": HOSTILE, "task": HOSTILE, "system": HOSTILE,
                       "tools": [], "requests": requests, "messages": after})
    file = tmp_path / "hostile.json"
    file.write_bytes(text.encode().replace(b"onerror", b"on\xff\xfeerror"))  # and invalid UTF-8 in the file itself
    return file


def test_hostile_text_and_a_1_mb_result_render_safely(tmp_path):
    file = hostile_file(tmp_path)
    done = CliRunner().invoke(workshop, ["transcript", str(file), "--html", str(tmp_path / "page.html"), "--no-open"])
    assert done.exit_code == 0, done.output
    raw = (tmp_path / "page.html").read_bytes()
    page = raw.decode("utf-8")  # strict: the page is valid UTF-8 whatever the file held
    assert page.count("<script>") == 1 and "alert(" not in page.split("<script>")[1].split("</script>")[0]
    assert "<img" not in page and "&lt;script&gt;alert(" in page and "&lt;img src=x on\ufffd\ufffderror" in page
    assert not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u202e]", page), "control characters and overrides are shown as symbols"
    assert "␀␇␛[31m" in page
    assert len(raw) < 600_000, "a 1 MB result is cut on the page, not copied whole"
    assert len(BIG) > 1_000_000 and f"{len(BIG + HOSTILE) + 2 - SHOW_CHARS:,} more characters" in page  # + the two \ufffd
    assert "line 39: " in page and "more lines</summary>" in page, "past a screen, the rest is folded"


def test_the_lesson_3_comparison_shows_write_sending_more_than_edit(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(workshop, ["demo", "lesson-3", "--compare", "--html", "both.html"])
    assert done.exit_code == 0, done.output
    assert "page: both.html" in done.output
    edit, write = (load(tmp_path / f"both-{label}.json") for label in ("edit", "write"))
    written = {name: sum(request.usage["output_tokens"] for request in run.requests) for name, run in (("edit", edit), ("write", write))}
    sent = {name: sum(input_tokens(request) for request in run.requests) for name, run in (("edit", edit), ("write", write))}
    assert written["write"] > written["edit"]
    page = (tmp_path / "both.html").read_text()
    ratio = written["write"] / written["edit"]
    assert (f"write sent {sent['write'] / sent['edit']:.2f}× the input tokens ({sent['write']:,} vs {sent['edit']:,}) "
            f"and {ratio:.2f}× the output tokens ({written['write']:,} vs {written['edit']:,}) of edit; it cost") in page
    assert [tool["name"] for request in write.requests for tool in request.tool_calls] == ["read", "write", "bash"]
    diff = write.requests[1].tool_calls[0]["diff"].splitlines()
    changed = [line for line in diff if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    assert len(changed) == 7 and changed[0].startswith("-    formats"), "the write's diff: the one line it replaced, and six"


def test_demo_records_its_run_and_draws_the_bar(started, tmp_path):
    import subprocess

    root = started(3, solved=True)
    file = tmp_path / "demo.json"
    done = subprocess.run([sys.executable, "-m", "grader.cli", "demo", "--transcript", str(file)], cwd=root,
                          capture_output=True, text=True, timeout=180, env={**os.environ, "COLUMNS": "80"})
    assert done.returncode == 0, done.stderr
    bars = [line for line in done.stdout.splitlines() if line.startswith("  context ")]
    assert len(bars) == 4 and all(len(line) <= 80 for line in bars) and "tokens: " not in done.stdout
    assert f"transcript: {file} (`workshop transcript {file}` draws it)" in " ".join(done.stdout.split())
    assert [call.get("name") for request in load(file).requests for call in request.tool_calls] == ["read", "edit", "bash"]
    quiet = subprocess.run([sys.executable, "-m", "grader.cli", "demo", "--quiet-tokens"], cwd=root, capture_output=True, text=True, timeout=180)
    assert quiet.returncode == 0 and "  context " not in quiet.stdout and "tokens over 4 replies" in quiet.stdout
    alone = subprocess.run([sys.executable, "-m", "grader.cli", "demo", "--html", "x.html"], cwd=root, capture_output=True, text=True)
    assert alone.returncode == 2 and "--html goes with --compare" in alone.stderr


def test_compare_is_refused_for_a_lesson_without_a_pair(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(workshop, ["demo", "lesson-2", "--compare"])
    assert done.exit_code == 2 and "lesson-3" in done.output and "lesson-8" in done.output


def test_two_runs_share_one_scale(solved_rover, env_kept, tmp_path):
    short, long = load(record(solved_rover, 3, tmp_path)[0]), load(record(solved_rover, 8, tmp_path)[0])
    page = render([short, long])
    charts = re.findall(r'<svg viewBox="0 0 (\d+) \d+" role="img"', page)
    assert charts == ["640", "640"]
    widths = {float(width) for width in re.findall(r'<rect x="[\d.]+" y="[\d.]+" width="([\d.]+)"', page)}
    assert len(widths) == 1, "the same bar width on both sides"
    ticks = [re.findall(r'text-anchor="end">([\d.]+k?)</text>', chart) for chart in re.findall(r'<svg viewBox="[^"]*" role="img".*?</svg>', page, flags=re.S)]
    assert ticks[0] == ticks[1] and len(ticks[0]) >= 3, "the same token scale on both sides"
    heights = [float(h) for h in re.findall(r'height="([\d.]+)" class="[^"]+" data-key="r0-', page)]
    assert max(heights) < 0.2 * (270 - 24 - 22), "lesson 3's bars are small beside lesson 8's 20k-token requests"


def test_the_bar_line_alone_fits_80_columns_at_any_size(solved_rover):
    import io

    from rich.console import Console

    from rover.display import Transcript

    for width in (80, 200, 60):
        screen = io.StringIO()
        Transcript(Console(file=screen, width=width, color_system=None)).context_bar(
            1_234_567, {"prompt+tools": 0.1, "task": 0.0, "model": 0.2, "tool results": 0.7}, 98_765_432)
        line = screen.getvalue().rstrip("\n")
        assert "\n" not in line and len(line) <= min(width, 80) and "tool results 70%" in line, line


def test_a_missing_folder_for_the_page_is_one_line(tmp_path):
    old = tmp_path / "old.json"
    old.write_text("[]")
    done = CliRunner().invoke(workshop, ["transcript", str(old), "--html", str(tmp_path / "no" / "page.html")])
    assert done.exit_code == 2 and "does not exist" in done.output and done.output.count("\n") == 1
