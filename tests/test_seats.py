"""Seats: one per student, one budget each. Roster, approval on the board, joins per address, `class students`."""
from __future__ import annotations

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from grader.classroom.board import create_app
from grader.classroom.safe_text import csv_cell, for_terminal
from grader.classroom.seats import JoinRate, Seats, read_roster
from grader.cli import main
from tests.test_board import post, report, says

WORKSPACE_A, WORKSPACE_B = "a" * 32, "b" * 32


def app_with(store, **seating) -> TestClient:
    return TestClient(create_app(store, seats=Seats(store, **seating)))


def join(client, store, name: str, workspace: str | None = None, token: str | None = None):
    headers = {"X-Class-Code": store.code, **({"Authorization": f"Bearer {token}"} if token else {})}
    return client.post("/api/join", json={"name": name, **({"workspace": workspace} if workspace else {})}, headers=headers)


def test_joining_again_from_a_workspace_under_other_names_keeps_one_seat_and_its_usage(store):
    with app_with(store, rate=JoinRate(per_minute=0)) as client:
        first = join(client, store, "Ada", WORKSPACE_A).json()
        ada = store.seat("Ada")
        store.settle(ada, 0, 1_000, 500)
        names = [join(client, store, f"Ada {number}", WORKSPACE_A) for number in range(7)]  # 8 names, one workspace
    assert [answer.status_code for answer in names] == [201] * 7
    seats = store.students()
    assert [(seat.name, seat.tokens) for seat in seats] == [("Ada 6", 1_500)]  # one seat, one budget, usage kept
    assert store.student_by_token(first["token"]) is None and store.student_by_token(names[-1].json()["token"]).name == "Ada 6"


def test_a_name_seated_from_another_workspace_is_not_taken_over(store):
    with app_with(store) as client:
        join(client, store, "Ada", WORKSPACE_A)
        taken = join(client, store, "Ada", WORKSPACE_B)
    assert taken.status_code == 409 and "workshop class students remove" in says(taken)
    assert len(store.students()) == 1


def test_a_roster_admits_only_its_names_spelled_as_the_roster_has_them(store, tmp_path):
    roster = tmp_path / "roster.txt"
    roster.write_text("# week 1\nAda Lovelace\n\nAlan Turing\n")
    with app_with(store, roster=read_roster(roster)) as client:
        ada = join(client, store, "ada lovelace", WORKSPACE_A)
        eve = join(client, store, "Eve", WORKSPACE_B)
    assert ada.status_code == 201 and ada.json()["name"] == "Ada Lovelace"
    assert eve.status_code == 403 and "not on this class's roster" in says(eve)
    assert [seat.name for seat in store.students()] == ["Ada Lovelace"]
    roster.write_text("Ada\n\x1b]0;owned\x07\n")
    with pytest.raises(ValueError, match="line 2 of"):
        read_roster(roster)


def test_joins_wait_for_the_instructors_approval_on_the_board(store, tmp_path):
    told = []
    with app_with(store, approve=True, tell=told.append) as client:
        answer = join(client, store, "Bob", WORKSPACE_A)
        token = answer.json()["token"]
        refused = post(client, store, token, report(1, read_lines="passed"))
        shown = client.get("/api/board", params={"token": store.instructor_token}).text
        not_yours = client.post("/api/seats/approve", json={"name": "Bob"}, headers={"Authorization": f"Bearer {token}"})
        approved = client.post("/api/seats/approve", json={"name": "Bob"}, headers={"Authorization": f"Bearer {store.instructor_token}"})
        accepted = post(client, store, token, report(1, read_lines="passed"))
        join(client, store, "Mallory", WORKSPACE_B)
        gone = client.post("/api/seats/remove", json={"name": "Mallory"}, params={"token": store.instructor_token})
        unknown = client.post("/api/seats/approve", json={"name": "Nobody"}, params={"token": store.instructor_token})
    assert answer.status_code == 202 and answer.json()["pending"] is True
    assert refused.status_code == 403 and "waiting for the instructor's approval" in says(refused)
    assert "0 students joined, 0 reporting, 1 waiting for approval" in shown
    assert '<button data-action="approve" data-name="Bob">Approve</button>' in shown
    assert not_yours.status_code == 401 and approved.status_code == 200 and accepted.status_code == 201
    assert gone.status_code == 200 and unknown.status_code == 404
    assert [seat.name for seat in store.students()] == ["Bob"]
    assert told == ["Bob is waiting for your approval (on the board)", "Bob approved", "Mallory is waiting for your approval (on the board)",
                    "Mallory removed"]


def test_joins_are_limited_per_address(store):
    with app_with(store, rate=JoinRate(per_minute=3)) as client:
        answers = [join(client, store, f"fake {number}", f"{number:032x}") for number in range(5)]
    assert [answer.status_code for answer in answers] == [201, 201, 201, 429, 429]
    assert "too many joins" in says(answers[3]) and 0 < int(answers[3].headers["retry-after"]) <= 61
    assert len(store.students()) == 3
    rate = JoinRate(per_minute=2)
    assert [rate.wait_for("10.0.0.9", now) > 0 for now in (0, 1, 2, 30, 60.5, 60.7)] == [False, False, True, True, False, True]
    assert rate.wait_for("10.0.0.8", 2) == 0  # another address is not held up


def test_class_students_lists_renames_removes_and_approves(store):
    ada, ada_token = store.join("Ada")
    store.join("Bob", pending=True)
    store.settle(ada, 0, 1_200, 34)
    with store._write() as db:  # a name an older board stored raw: the terminal must not act on it
        db.execute("INSERT INTO students (name, token_hash, joined_at) VALUES (?, 'x', 0)", ("\x1b]0;pwned\x07Eve\x1b[2J\u202e",))
    db = ["--db", str(store.path)]
    listed = CliRunner().invoke(main, ["class", "students", *db])
    assert listed.exit_code == 0, listed.output
    assert "\x1b" not in listed.output and "\u202e" not in listed.output and "\x07" not in listed.output
    lines = listed.output.splitlines()
    rows = {line.split()[0]: line.split()[1:] for line in lines[1:-1]}
    assert rows["Ada"] == ["active", "-", "-", "never", "1,234", "1"]
    assert rows["Bob"][0] == "pending" and rows["]0;pwnedEve[2J"][0] == "active"
    assert lines[-1] == "3 seats, 1 waiting for approval (workshop class students approve NAME)"
    assert CliRunner().invoke(main, ["class", "students", "approve", "Bob", *db]).exit_code == 0 and not store.seat("Bob").pending
    renamed = CliRunner().invoke(main, ["class", "students", "rename", "Ada", "Ada L.", *db])
    assert renamed.exit_code == 0 and store.student_by_token(ada_token).name == "Ada L." and store.seat("Ada L.").tokens == 1_234
    taken = CliRunner().invoke(main, ["class", "students", "rename", "Bob", "Ada L.", *db])
    assert taken.exit_code == 2 and "already a seat" in taken.output
    removed = CliRunner().invoke(main, ["class", "students", "remove", "Ada L.", *db])
    assert removed.exit_code == 0 and store.student_by_token(ada_token) is None
    missing = CliRunner().invoke(main, ["class", "students", "remove", "Zed", *db])
    assert missing.exit_code == 2 and "no seat named 'Zed'" in missing.output
    nowhere = CliRunner().invoke(main, ["class", "students", "--db", str(store.path.parent / "none.sqlite")])
    assert nowhere.exit_code == 2 and "no class database" in nowhere.output and not (store.path.parent / "none.sqlite").exists()


def test_names_are_safe_on_a_terminal_and_in_a_spreadsheet():
    assert for_terminal("\x1b]0;title\x07Ada\x1b[2J\r\n\u202eevil\u2028") == "]0;titleAda[2J evil"  # a line break: a space
    assert for_terminal("Zoë Ñúñez 李") == "Zoë Ñúñez 李"
    for formula in ("=HYPERLINK(\"x\")", "@SUM(A1)", "+1", "-1+2", " =1", "＝1"):
        assert csv_cell(formula) == "'" + formula
    assert csv_cell("\t=1") == "' =1" and csv_cell("\x1b=1\ud800") == "'=1\ufffd"  # no control or surrogate stays
    assert csv_cell("Ada") == "Ada" and csv_cell(-3) == -3 and csv_cell("") == ""


def test_joins_are_limited_per_address_per_hour_too():
    rate = JoinRate(per_minute=6, per_hour=10)
    allowed = [rate.wait_for("10.0.0.9", at * 61.0) == 0 for at in range(12)]  # one a minute: never the minute's limit
    assert allowed == [True] * 10 + [False, False]
    assert 3600 - 11 * 61 - 1 < rate.wait_for("10.0.0.9", 11 * 61) <= 3600 - 11 * 61 + 1  # until the first join is an hour old
    assert rate.wait_for("10.0.0.9", 3600.5) == 0 and rate.wait_for("10.0.0.8", 700) == 0
    assert JoinRate().per_hour == 20 and JoinRate(per_minute=0).wait_for("x", 0) == 0  # 0 a minute: no limit at all


def test_pending_seats_are_capped_apart_and_cannot_fill_the_class(store, tmp_path, monkeypatch):
    """Hole 5: joins waiting for approval do not take the class's seats; approving past the cap is refused clearly."""
    monkeypatch.setattr("grader.classroom.store.MAX_STUDENTS", 2)
    monkeypatch.setattr("grader.classroom.store.MAX_PENDING", 3)
    roster = tmp_path / "roster.txt"
    roster.write_text("Ada Lovelace\nAlan Turing\n")
    instructor = {"Authorization": f"Bearer {store.instructor_token}"}
    with app_with(store, roster=read_roster(roster), approve=True, rate=JoinRate(per_minute=0)) as client:
        bots = [join(client, store, f"bot {number}", f"{number:032x}") for number in range(4)]
        ada = join(client, store, "Ada Lovelace", WORKSPACE_A)
        first = client.post("/api/seats/approve", json={"name": "bot 0"}, headers=instructor)
        full = client.post("/api/seats/approve", json={"name": "bot 1"}, headers=instructor)
        alan = join(client, store, "Alan Turing", WORKSPACE_B)
    assert [bot.status_code for bot in bots] == [202, 202, 202, 403]
    assert "too many joins are waiting for approval" in says(bots[3])
    assert ada.status_code == 201 and first.status_code == 200  # the roster's student is seated, the crowd notwithstanding
    assert full.status_code == 409 and "this class is full: remove a seat before approving 'bot 1'" in says(full)
    assert alan.status_code == 403 and "this class is full" in says(alan)
    assert sorted((seat.name, seat.state) for seat in store.students()) == [
        ("Ada Lovelace", "active"), ("bot 0", "active"), ("bot 1", "pending"), ("bot 2", "pending")]


def test_a_roster_seat_taken_from_another_workspace_says_how_the_instructor_frees_it(store, tmp_path):
    roster = tmp_path / "roster.txt"
    roster.write_text("Grace Hopper\n")
    with app_with(store, roster=read_roster(roster)) as client:
        first = join(client, store, "grace  hopper", WORKSPACE_A)
        second = join(client, store, "Grace Hopper", WORKSPACE_B)
    assert first.status_code == 201 and first.json()["name"] == "Grace Hopper"
    assert second.status_code == 409
    assert "'Grace Hopper' on the roster already has a seat" in says(second)
    assert "workshop class students remove 'Grace Hopper'" in says(second)


def test_the_join_limit_goes_by_the_sockets_address_not_x_forwarded_for(store):
    """Hole 6: uvicorn trusts X-Forwarded-For from 127.0.0.1 by default; the board must not, or a new header is a new address."""
    import httpx

    from grader.classroom.serving import in_thread

    with in_thread(create_app(store, seats=Seats(store, rate=JoinRate(per_minute=2)))) as url:
        answers = [httpx.post(f"{url}/api/join", json={"name": f"fake {number}", "workspace": f"{number:032x}"}, timeout=5,
                              headers={"X-Class-Code": store.code, "X-Forwarded-For": f"10.0.0.{number}", "Forwarded": f"for=10.0.1.{number}"})
                   for number in range(4)]
    assert [answer.status_code for answer in answers] == [201, 201, 429, 429]
    assert "too many joins from 127.0.0.1" in says(answers[2])


def test_names_are_normalised_before_they_are_compared(store):
    """Hole 7: double spaces and full-width letters do not make a second "Ada Lovelace"; scripts stay apart."""
    with app_with(store, rate=JoinRate(per_minute=0)) as client:
        first = join(client, store, "  Ada   Lovelace ", WORKSPACE_A)
        spaced = join(client, store, "Ada Lovelace", WORKSPACE_B)
        wide = join(client, store, "Ａｄａ\u3000Lovelace", "c" * 32)  # full-width letters, an ideographic space
        tabbed = join(client, store, "Ada\tLovelace", "d" * 32)
        cyrillic = join(client, store, "\u0410da Lovelace", "e" * 32)  # a Cyrillic A: a different name, kept (see the note)
    assert first.status_code == 201 and first.json()["name"] == "Ada Lovelace"
    assert spaced.status_code == 409 and wide.status_code == 409 and "'Ada Lovelace' is taken" in says(wide)
    assert tabbed.status_code == 422  # a control character is refused, not folded into a space
    assert cyrillic.status_code == 201
    assert sorted(seat.name for seat in store.students()) == ["Ada Lovelace", "\u0410da Lovelace"]


def test_many_addresses_cannot_take_the_class_past_its_size_or_its_rate(store):
    """Issue 25: 100 addresses took 500 seats in 36 s. The join limit is class-wide as well as per address, and past
    the expected class size a new seat waits for approval (a rejoin keeps its own seat)."""
    from grader.classroom.payloads import Join
    from grader.classroom.refusals import Refused

    seats = Seats(store, class_size=30)
    outcomes = []
    for attempt in range(5):
        for address in range(100):
            try:
                student, _ = seats.join(Join(name=f"bot {address}-{attempt}", workspace=f"{address:016x}{attempt:016x}"),
                                        None, f"10.0.{address}.1")
                outcomes.append("pending" if student.pending else "seated")
            except Refused as refused:
                outcomes.append(refused.status)
    assert outcomes.count("seated") == 30 and outcomes.count("pending") == 90, "the class's size, then its approval"
    assert outcomes.count(429) == 500 - 120, "120 joins a minute from the whole class, whatever the addresses"
    assert len(store.students()) == 120 and sum(not seat.pending for seat in store.students()) == 30
    first = store.students()[0]
    again, _ = Seats(store, class_size=30).join(Join(name="back again", workspace=f"{0:016x}{0:016x}"), None, "10.9.9.9")
    assert again.id == first.id and not again.pending, "a seated workspace that joins again keeps its seat"
