"""`workshop join` / `leave`, and the background post each `workshop check` makes once joined."""
from __future__ import annotations

import json
import socket
import stat
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from grader.classroom.board import create_app
from grader.classroom.report import HARD_STOP, class_file, share_with_class
from grader.classroom.serving import bind, in_thread
from grader.classroom.store import Store
from grader.cli import main
from grader.course import kit
from grader.grading.grade import Grade
from grader.grading.runner import Outcome


@pytest.fixture
def board(store):
    with in_thread(create_app(store)) as url:
        yield url


@pytest.fixture
def joined_workspace(workspace, monkeypatch):
    folder = workspace(1)
    subprocess.run(["git", "init", "-q"], cwd=folder, check=True)
    subprocess.run(["git", "add", "-A"], cwd=folder, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start"], cwd=folder, check=True)
    monkeypatch.chdir(folder)
    return folder


def join(url: str, code: str, name: str = "Ada"):
    return CliRunner().invoke(main, ["join", url, code, "--name", name])


def a_grade(lesson: int = 1) -> Grade:
    checks = [check for number in range(lesson + 1) for check in kit.lesson(number).checks]
    return Grade(lesson, [Outcome(check, "passed" if index % 2 else "failed", "why") for index, check in enumerate(checks)])


def wait_for_reports(store: Store, count: int, within: float = 10) -> None:
    deadline = time.monotonic() + within
    while store.report_count() < count and time.monotonic() < deadline:
        time.sleep(0.05)
    assert store.report_count() == count


def test_join_remembers_the_class_inside_git_where_it_is_never_committed(joined_workspace, board, store):
    done = join(board, store.code)
    assert done.exit_code == 0, done.output
    assert "as Ada" in done.output and "workshop leave" in done.output
    saved = json.loads(class_file(joined_workspace).read_text())
    assert saved["url"] == board and saved["code"] == store.code and store.student_by_token(saved["token"]).name == "Ada"
    assert stat.S_IMODE(class_file(joined_workspace).stat().st_mode) == 0o600
    assert subprocess.run(["git", "status", "--porcelain"], cwd=joined_workspace, capture_output=True, text=True).stdout == ""
    again = join(board, store.code)  # joining again from the same workspace keeps the same student
    assert again.exit_code == 0 and json.loads(class_file(joined_workspace).read_text())["token"] == saved["token"]
    assert len(store.students()) == 1


def test_a_check_posts_its_summary_in_the_background(joined_workspace, board, store):
    join(board, store.code)
    started = time.monotonic()
    poster = share_with_class(a_grade(1))
    handed_off = time.monotonic() - started
    assert poster is not None and poster.wait(10) == 0
    wait_for_reports(store, 1)
    ada = store.students()[0]
    expected = a_grade(1)
    assert (ada.lesson, ada.passed, ada.total) == (1, sum(o.passed for o in expected.outcomes), len(expected.outcomes))
    assert ada.failing == tuple(o.check.id for o in expected.outcomes if not o.passed)
    assert handed_off < 0.5


def test_workshop_check_reports_what_it_graded(joined_workspace, board, store):
    join(board, store.code)
    done = subprocess.run([sys.executable, "-m", "grader.cli", "check", "--json"], cwd=joined_workspace, capture_output=True, text=True, timeout=120)
    graded = json.loads(done.stdout)
    wait_for_reports(store, 1)
    ada = store.students()[0]
    assert ada.lesson == graded["lesson"] and ada.total == len(graded["checks"])
    assert ada.failing == tuple(check["id"] for check in graded["checks"] if check["status"] != "passed")


@pytest.mark.parametrize("board_state", ["down", "silent"])
def test_a_board_that_is_down_or_silent_costs_the_check_nothing(joined_workspace, store, board_state):
    listener = bind("127.0.0.1", 0)  # "silent": accepts connections and never answers
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    if board_state == "down":
        listener.close()
    class_file(joined_workspace).write_text(json.dumps({"url": url, "code": store.code, "name": "Ada", "token": "class-x", "relay": False}))
    try:
        started = time.monotonic()
        poster = share_with_class(a_grade(1))
        handed_off = time.monotonic() - started
        assert handed_off < 0.5
        assert poster.wait(HARD_STOP + 2) == 1  # gave up on its own, within its time limit
    finally:
        listener.close()


def test_leave_stops_the_posts(joined_workspace, board, store):
    join(board, store.code)
    done = CliRunner().invoke(main, ["leave"])
    assert done.exit_code == 0 and "Left the class" in done.output
    assert not class_file(joined_workspace).exists() and share_with_class(a_grade(1)) is None
    assert "nothing to leave" in CliRunner().invoke(main, ["leave"]).output


def test_join_errors_are_one_line_and_leave_nothing(joined_workspace, board, store):
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    nowhere = f"http://127.0.0.1:{free.getsockname()[1]}"
    free.close()
    for args, says in [([nowhere, store.code], "could not reach the class board"),
                       ([board, "WRNG-CODE"], "did not let you join: X-Class-Code is not this class's code"),
                       (["ftp://board", store.code], "is not a board address")]:
        done = CliRunner().invoke(main, ["join", *args, "--name", "Ada"])
        assert done.exit_code == 2 and says in done.output and "Traceback" not in done.output
    store.join("Bob")
    taken = join(board, store.code, "Bob")
    assert taken.exit_code == 2 and "the name 'Bob' is taken" in taken.output
    assert not class_file(joined_workspace).exists()


def test_join_outside_a_workspace_says_where_to_go(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(main, ["join", "http://127.0.0.1:1", "CODE-CODE", "--name", "Ada"])
    assert done.exit_code == 2 and "not inside a Rover workspace" in done.output


def test_not_joined_the_check_path_imports_no_http_client(tmp_path):
    probe = ("import sys; import grader.cli; from grader.classroom.report import share_with_class; "
             "share_with_class(None); print(sorted(m for m in ('httpx', 'fastapi', 'uvicorn', 'urllib.request') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stderr


def test_the_summary_of_every_check_of_every_lesson_is_a_report_the_board_accepts():
    from dataclasses import dataclass

    from grader.classroom.payloads import Report
    from grader.classroom.report import summary

    @dataclass(frozen=True)
    class Timed:  # an outcome that carries its wall time, as the runner's will
        check: kit.Check
        status: str
        seconds: float

        @property
        def passed(self) -> bool:
            return self.status == "passed"

    last = len(kit.lessons()) - 1
    result = Grade(last, [Timed(check, "timeout", 0.5) for number in range(last + 1) for check in kit.lesson(number).checks])
    sent = summary(result, seconds=1.25)
    accepted = Report.model_validate(sent)
    assert len(accepted.checks) == len(result.outcomes) and {check.seconds for check in accepted.checks} == {0.5}
    assert accepted.seconds == 1.25 and accepted.lesson == last and not accepted.passed
    assert set(sent) == {"id", "lesson", "passed", "score", "max_score", "seconds", "checks"}  # no messages, no hints, no code
    assert len(json.dumps(sent)) < 64 * 1024


def test_rejoining_from_a_workspace_under_a_new_name_replaces_its_seat(joined_workspace, board, store):
    assert join(board, store.code, "Ada").exit_code == 0
    first = json.loads(class_file(joined_workspace).read_text())["token"]
    renamed = join(board, store.code, "Ada Lovelace")
    assert renamed.exit_code == 0 and "as Ada Lovelace" in renamed.output
    assert [seat.name for seat in store.students()] == ["Ada Lovelace"]  # no stale "Ada" row
    assert store.student_by_token(first).name == "Ada Lovelace"  # the token in use elsewhere (an exported key) still works
    assert CliRunner().invoke(main, ["leave"]).exit_code == 0  # leaving forgets the token, not the workspace's seat
    back = join(board, store.code, "Ada L.")
    assert back.exit_code == 0 and [seat.name for seat in store.students()] == ["Ada L."]
    latest = json.loads(class_file(joined_workspace).read_text())["token"]
    assert store.student_by_token(latest).name == "Ada L." and store.student_by_token(first) is None  # the old token is void
    workspace_id = (joined_workspace / ".git" / "workshop-workspace-id").read_text().strip()
    assert len(workspace_id) == 32 and subprocess.run(["git", "status", "--porcelain"], cwd=joined_workspace,
                                                      capture_output=True, text=True).stdout == ""


def test_a_join_waiting_for_approval_says_so(joined_workspace, store):
    from grader.classroom.seats import Seats

    with in_thread(create_app(store, seats=Seats(store, approve=True))) as url:
        done = join(url, store.code, "Bob")
    assert done.exit_code == 0 and "the instructor approves it on the board" in " ".join(done.output.split())
    assert store.students()[0].pending


def test_a_name_over_40_characters_is_refused_in_our_own_words(joined_workspace, board, store):
    done = join(board, store.code, "Maximiliana Wolfeschlegelsteinhausen-Bergdorff")
    said = " ".join(done.output.split())
    assert done.exit_code == 2 and "a name is at most 40 characters and this one has 46: shorten it" in said, said
    assert "String should" not in said and "Value error" not in said and not class_file(joined_workspace).exists()
