"""The class's one embedded store: a SQLite file that keeps the board's history across restarts.

One connection behind a lock serves the whole app: every operation is a short transaction, so
writes never wait on each other for long, and WAL mode lets the file be read while it is written.
Student tokens are kept only as SHA-256 digests; the class code and instructor token are kept as
they are, since the instructor's own machine prints them again at every start.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from grader.classroom.payloads import Report

MAX_STUDENTS = 500
CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O or 1/I: read aloud and typed by hand

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS students (
    id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, token_hash TEXT NOT NULL UNIQUE, joined_at REAL NOT NULL,
    lesson INTEGER, passed INTEGER, total INTEGER, failing TEXT NOT NULL DEFAULT '[]',
    last_at REAL, progress_at REAL,
    tokens_in INTEGER NOT NULL DEFAULT 0, tokens_out INTEGER NOT NULL DEFAULT 0, requests INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS reports (
    id INTEGER PRIMARY KEY, student_id INTEGER NOT NULL REFERENCES students(id), report_id TEXT NOT NULL,
    at REAL NOT NULL, lesson INTEGER NOT NULL, passed INTEGER NOT NULL, score INTEGER NOT NULL,
    max_score INTEGER NOT NULL, seconds REAL, checks TEXT NOT NULL, UNIQUE (student_id, report_id));
"""


COLUMNS = "id, name, lesson, passed, total, failing, last_at, progress_at, tokens_in, tokens_out, requests"


class NameTaken(ValueError):
    pass


class ClassFull(ValueError):
    pass


@dataclass(frozen=True)
class Student:
    id: int
    name: str
    lesson: int | None = None
    passed: int = 0
    total: int = 0
    failing: tuple[str, ...] = ()
    last_at: float | None = None
    progress_at: float | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    requests: int = 0

    @property
    def tokens(self) -> int:
        return self.tokens_in + self.tokens_out

    def stuck_for(self, now: float) -> float | None:
        """Seconds since this student last moved forward, while something still fails; None when not stuck."""
        if self.progress_at is None or not self.failing:
            return None
        return max(0.0, now - self.progress_at)


class Store:
    def __init__(self, path: Path | str):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)
        self.code = self._meta("class_code", lambda: "-".join("".join(secrets.choice(CODE_ALPHABET) for _ in range(4)) for _ in range(2)))
        self.instructor_token = self._meta("instructor_token", lambda: secrets.token_urlsafe(24))

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def is_code(self, code: str) -> bool:
        return hmac.compare_digest(code.strip().upper().encode(), self.code.encode())

    def is_instructor(self, token: str) -> bool:
        return hmac.compare_digest(token.encode(), self.instructor_token.encode())

    def join(self, name: str, token: str | None = None) -> tuple[Student, str]:
        """A new student and their token; the same student again when they come back with their own token."""
        with self._lock:
            row = self._db.execute("SELECT id, token_hash FROM students WHERE name = ?", (name,)).fetchone()
            if row is not None:
                if token and hmac.compare_digest(row[1], _digest(token)):
                    return self._student(row[0]), token
                raise NameTaken(name)
            if self._db.execute("SELECT count(*) FROM students").fetchone()[0] >= MAX_STUDENTS:
                raise ClassFull(name)
            token = "class-" + secrets.token_urlsafe(24)
            cursor = self._db.execute("INSERT INTO students (name, token_hash, joined_at) VALUES (?, ?, ?)", (name, _digest(token), time.time()))
            return self._student(cursor.lastrowid), token

    def student_by_token(self, token: str) -> Student | None:
        with self._lock:
            digest = _digest(token)
            row = self._db.execute(f"SELECT {COLUMNS}, token_hash FROM students WHERE token_hash = ?", (digest,)).fetchone()
            return _row(row[:-1]) if row is not None and hmac.compare_digest(row[-1], digest) else None

    def record(self, student: Student, report: Report, now: float | None = None) -> bool:
        """Store one report; False (and nothing changed) when this report id was already stored for this student."""
        now = time.time() if now is None else now
        failing = [check.id for check in report.checks if check.status != "passed"]
        passed = len(report.checks) - len(failing)
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                cursor = self._db.execute(
                    "INSERT OR IGNORE INTO reports (student_id, report_id, at, lesson, passed, score, max_score, seconds, checks)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (student.id, report.id, now, report.lesson, report.passed, report.score, report.max_score, report.seconds,
                     report.model_dump_json(include={"checks"}, exclude_none=True)))
                if cursor.rowcount == 0:
                    self._db.execute("ROLLBACK")
                    return False
                lesson, passed_before, progress_at = self._db.execute(
                    "SELECT lesson, passed, progress_at FROM students WHERE id = ?", (student.id,)).fetchone()
                moved = lesson is None or report.lesson != lesson or passed > (passed_before or 0)  # a step forward restarts "stuck for"
                self._db.execute(
                    "UPDATE students SET lesson = ?, passed = ?, total = ?, failing = ?, last_at = ?, progress_at = ? WHERE id = ?",
                    (report.lesson, passed, len(report.checks), json.dumps(failing), now, now if moved else progress_at, student.id))
                self._db.execute("COMMIT")
                return True
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def add_usage(self, student: Student, tokens_in: int, tokens_out: int) -> None:
        with self._lock:
            self._db.execute("UPDATE students SET tokens_in = tokens_in + ?, tokens_out = tokens_out + ?, requests = requests + 1 WHERE id = ?",
                             (tokens_in, tokens_out, student.id))

    def students(self) -> list[Student]:
        with self._lock:
            return [_row(row) for row in self._db.execute(f"SELECT {COLUMNS} FROM students ORDER BY name")]

    def report_count(self) -> int:
        with self._lock:
            return self._db.execute("SELECT count(*) FROM reports").fetchone()[0]

    def report_ids(self) -> list[tuple[str, str]]:
        """(student name, report id) of every stored report: what a load test compares with what it sent."""
        with self._lock:
            return self._db.execute("SELECT s.name, r.report_id FROM reports r JOIN students s ON s.id = r.student_id").fetchall()

    def _student(self, student_id: int) -> Student:
        return _row(self._db.execute(f"SELECT {COLUMNS} FROM students WHERE id = ?", (student_id,)).fetchone())

    def _meta(self, key: str, make) -> str:
        with self._lock:
            self._db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)", (key, make()))
            return self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()[0]


def _row(row: tuple) -> Student:
    return Student(row[0], row[1], row[2], row[3] or 0, row[4] or 0, tuple(json.loads(row[5])), *row[6:])


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()
