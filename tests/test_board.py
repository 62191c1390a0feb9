"""The class board's API: who may post and read, what is refused, what the board then shows."""
from __future__ import annotations

import csv
import io
import os

import httpx
import pytest
from fastapi.testclient import TestClient

from grader.classroom.board import create_app
from grader.classroom.payloads import MAX_CHECKS
from grader.classroom.serving import in_thread
from grader.classroom.store import Store


@pytest.fixture
def client(store):
    with TestClient(create_app(store)) as client:
        yield client


def join(client, store, name: str) -> str:
    answer = client.post("/api/join", json={"name": name}, headers={"X-Class-Code": store.code})
    assert answer.status_code == 201, answer.text
    return answer.json()["token"]


def report(lesson: int = 1, report_id: str = "a" * 32, **statuses: str) -> dict:
    checks = [{"id": check.replace("_", "."), "lesson": lesson, "status": status, "seconds": 0.25} for check, status in statuses.items()]
    return {"id": report_id, "lesson": lesson, "passed": all(status == "passed" for status in statuses.values()),
            "score": sum(status == "passed" for status in statuses.values()), "max_score": len(statuses), "checks": checks}


def post(client, store, token: str, payload, code: str | None = None):
    headers = {"X-Class-Code": store.code if code is None else code, "Authorization": f"Bearer {token}"}
    return client.post("/api/report", json=payload, headers=headers)


def says(answer) -> str:
    """The message of a refusal, which is always in the Messages API's error shape."""
    body = answer.json()
    assert set(body) == {"type", "error"} and body["type"] == "error" and set(body["error"]) == {"type", "message"}, body
    return body["error"]["message"]


def name_cell(name: str) -> str:
    return f'<td class="name"><span title="{name}">{name}</span></td>'


def board(client, store) -> str:
    answer = client.get("/api/board", params={"token": store.instructor_token})
    assert answer.status_code == 200
    return answer.text


def test_reports_show_on_the_board_with_the_checks_failing_most(client, store):
    ada, bob, cy = (join(client, store, name) for name in ("Ada", "Bob", "Cy"))
    assert post(client, store, ada, report(1, read_lines="passed", read_missing="failed")).status_code == 201
    assert post(client, store, bob, report(1, read_lines="failed", read_missing="failed")).status_code == 201
    assert post(client, store, cy, report(1, read_lines="passed", read_missing="passed")).status_code == 201
    shown = board(client, store)
    assert "3 students joined, 3 reporting" in shown
    assert '<span class="count">2</span> <code>read.missing</code>' in shown  # failing for Ada and Bob: explain it next
    assert '<span class="count">1</span> <code>read.lines</code>' in shown
    assert f"{name_cell('Bob')}<td>1</td><td>0/2</td>" in shown and f"{name_cell('Ada')}<td>1</td><td>1/2</td>" in shown
    assert f'<tr class="done">{name_cell("Cy")}' in shown and "✓ all pass" in shown
    assert "<th>lesson 1</th>" in shown and "<td>1 done</td><td>2 working</td>" in shown


def test_only_the_instructor_token_reads(client, store):
    student = join(client, store, "Ada")
    for path in ("/", "/api/board", "/board.csv"):
        assert client.get(path).status_code == (200 if path == "/" else 401)  # "/" without a token: a note, no data
        assert client.get(path, params={"token": "not-it"}).status_code == 401
        assert client.get(path, headers={"Authorization": f"Bearer {student}"}).status_code == 401
        assert client.get(path, params={"token": store.code}).status_code == 401
        assert client.get(path, params={"token": store.instructor_token}).status_code == 200
    page = client.get("/", params={"token": store.instructor_token})
    assert "script-src 'self'" in page.headers["content-security-policy"] and '<script src="/board.js"' in page.text


def test_only_a_valid_class_code_and_a_students_own_token_post(client, store):
    ada = join(client, store, "Ada")
    assert client.post("/api/join", json={"name": "Eve"}).status_code == 401
    assert client.post("/api/join", json={"name": "Eve"}, headers={"X-Class-Code": "AAAA-AAAA"}).status_code == 403
    assert post(client, store, ada, report(), code="").status_code == 401
    wrong = post(client, store, ada, report(), code="WRNG-CODE")
    assert says(wrong) == "X-Class-Code is not this class's code: check the code the instructor gave"
    assert wrong.json()["error"]["type"] == "permission_error"
    assert post(client, store, "class-made-up", report()).status_code == 401
    assert post(client, store, ada, report(), code=store.code.lower()).status_code == 201  # a code typed in lower case is still the code
    assert store.report_count() == 1


@pytest.mark.parametrize("payload, status, expected", [
    ({**report(), "grade": "A+"}, 422, "unknown field 'grade'"),
    ({**report(), "checks": [{"id": "read.lines", "lesson": 1, "status": "passed", "note": "x"}]}, 422, "unknown field 'checks.0.note'"),
    ({**report(), "checks": [{"id": "read.lines", "lesson": 1, "status": "passed"}] * (MAX_CHECKS + 1)}, 422, "checks: List should have at most 200 items"),
    ({**report(), "checks": [{"id": "x" * 65, "lesson": 1, "status": "passed"}]}, 422, "checks.0.id: String should have at most 64 characters"),
    ({**report(), "checks": [{"id": "<img src=x>", "lesson": 1, "status": "passed"}]}, 422, "checks.0.id: String should match pattern"),
    ({**report(), "checks": [{"id": "read.lines", "lesson": 1, "status": "great"}]}, 422, "checks.0.status: Input should be 'passed'"),
    ({**report(), "lesson": -1}, 422, "lesson: Input should be greater than or equal to 0"),
    ({**report(), "id": "short"}, 422, "id: String should match pattern"),
    ({key: value for key, value in report().items() if key != "checks"}, 422, "checks: Field required"),
    ([1, 2], 422, "body: Input should be an object"),
])
def test_a_bad_report_gets_one_reason_and_changes_nothing(client, store, payload, status, expected):
    ada = join(client, store, "Ada")
    assert post(client, store, ada, report(1, read_lines="failed")).status_code == 201
    before = (store.students(), store.report_count())
    answer = post(client, store, ada, payload)
    assert answer.status_code == status
    assert expected in says(answer) and "\n" not in says(answer)
    assert (store.students(), store.report_count()) == before


def test_an_oversized_or_broken_body_is_refused_before_parsing(client, store):
    ada = join(client, store, "Ada")
    headers = {"X-Class-Code": store.code, "Authorization": f"Bearer {ada}", "Content-Type": "application/json"}
    huge = client.post("/api/report", content=b"{" + b" " * 70_000 + b"}", headers=headers)
    assert huge.status_code == 413 and "at most 65,536" in says(huge)
    broken = client.post("/api/report", content=b'{"id": ', headers=headers)
    assert broken.status_code == 422 and "Invalid JSON" in says(broken)
    assert store.report_count() == 0


def test_a_post_sent_twice_is_stored_once(client, store):
    ada = join(client, store, "Ada")
    assert post(client, store, ada, report(1, "b" * 32, read_lines="failed")).json() == {"stored": True}
    again = post(client, store, ada, report(1, "b" * 32, read_lines="passed"))
    assert (again.status_code, again.json()) == (200, {"stored": False})
    assert store.report_count() == 1 and store.students()[0].failing == ("read.lines",)


def test_a_student_cannot_overwrite_another(client, store):
    ada, bob = join(client, store, "Ada"), join(client, store, "Bob")
    post(client, store, ada, report(2, "c" * 32, bash_timeout="failed"))
    post(client, store, bob, report(1, "c" * 32, read_lines="passed"))  # the same report id, from Bob: Bob's own row
    rows = {student.name: student for student in store.students()}
    assert (rows["Ada"].lesson, rows["Ada"].failing) == (2, ("bash.timeout",))
    assert (rows["Bob"].lesson, rows["Bob"].failing) == (1, ())
    taken = client.post("/api/join", json={"name": "Ada"}, headers={"X-Class-Code": store.code})
    assert taken.status_code == 409 and "taken" in says(taken)
    stolen = client.post("/api/join", json={"name": "Ada"}, headers={"X-Class-Code": store.code, "Authorization": f"Bearer {bob}"})
    assert stolen.status_code == 409
    back = client.post("/api/join", json={"name": "Ada"}, headers={"X-Class-Code": store.code, "Authorization": f"Bearer {ada}"})
    assert back.status_code == 201 and back.json()["token"] == ada


def test_names_are_escaped_on_the_page_and_defused_in_the_csv(client, store):
    mallory = join(client, store, "<script>alert(1)</script>")
    join(client, store, "=HYPERLINK(\"x\")")
    post(client, store, mallory, report(1, read_lines="failed"))
    shown = board(client, store)
    assert "<script>" not in shown and "&lt;script&gt;alert(1)&lt;/script&gt;" in shown
    exported = client.get("/board.csv", params={"token": store.instructor_token})
    assert exported.headers["content-disposition"] == 'attachment; filename="class.csv"'
    rows = list(csv.DictReader(io.StringIO(exported.text)))
    assert {row["name"] for row in rows} == {"<script>alert(1)</script>", "'=HYPERLINK(\"x\")"}
    assert {row["seat"] for row in rows} == {"active"}
    assert next(row for row in rows if row["name"].startswith("<"))["failing"] == "read.lines"
    assert client.post("/api/join", json={"name": "tab\there"}, headers={"X-Class-Code": store.code}).status_code == 422


def test_stuck_for_counts_from_the_last_step_forward(store):
    ada, _ = store.join("Ada")
    from grader.classroom.payloads import Report

    def send(at: float, **statuses: str) -> None:
        store.record(ada, Report.model_validate(report(1, os.urandom(16).hex(), **statuses)), now=at)

    send(1000, read_lines="failed", read_missing="failed")
    send(1300, read_lines="failed", read_missing="failed")
    assert store.students()[0].stuck_for(1600) == 600  # no progress since the first report
    send(1700, read_lines="passed", read_missing="failed")
    assert store.students()[0].stuck_for(1800) == 100  # one more check passes: the clock starts again
    send(1900, read_lines="passed", read_missing="passed")
    assert store.students()[0].stuck_for(5000) is None  # all pass: not stuck


def test_the_class_survives_a_restart(tmp_path):
    first = Store(tmp_path / "class.sqlite")
    ada, token = first.join("Ada")
    from grader.classroom.payloads import Report

    first.record(ada, Report.model_validate(report(3, read_lines="failed")))
    code, instructor = first.code, first.instructor_token
    first.close()
    again = Store(tmp_path / "class.sqlite")
    assert (again.code, again.instructor_token) == (code, instructor)
    assert again.student_by_token(token).failing == ("read.lines",) and again.report_count() == 1
    again.close()


def test_the_api_over_a_real_uvicorn_on_loopback(store):
    with in_thread(create_app(store)) as url, httpx.Client(base_url=url, timeout=5) as http:
        token = http.post("/api/join", json={"name": "Ada"}, headers={"X-Class-Code": store.code}).json()["token"]
        sent = http.post("/api/report", json=report(4, read_lines="passed", edit_unique="failed"),
                         headers={"X-Class-Code": store.code, "Authorization": f"Bearer {token}"})
        assert sent.status_code == 201
        shown = http.get("/api/board", headers={"Authorization": f"Bearer {store.instructor_token}"}).text
        assert f"{name_cell('Ada')}<td>4</td><td>1/2</td>" in shown and "<code>edit.unique</code>" in shown
        exported = http.get("/board.csv", params={"token": store.instructor_token}).text.splitlines()
        assert exported[1].startswith("Ada,active,4,1,2,")
        assert http.get("/board.js").headers["content-type"].startswith("text/javascript")


def test_a_full_class_refuses_one_more(client, store, monkeypatch):
    monkeypatch.setattr("grader.classroom.store.MAX_STUDENTS", 2)
    join(client, store, "Ada"), join(client, store, "Bob")
    full = client.post("/api/join", json={"name": "Cy"}, headers={"X-Class-Code": store.code})
    assert full.status_code == 403 and "full" in says(full) and len(store.students()) == 2
