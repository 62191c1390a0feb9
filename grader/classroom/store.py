"""The class's one embedded store: a SQLite file that keeps the board's history across restarts.

One connection behind a lock serves the whole app: every operation is a short transaction, so
writes never wait on each other for long, and WAL mode lets the file be read while it is written
(by `workshop class students`, say). Student tokens are kept only as SHA-256 digests; the class code
and instructor token are kept as they are, since the instructor's own machine prints them again at
every start. A database that cannot be written (a full disk) raises `Unavailable` with its reason.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import sqlite3
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from grader.classroom.payloads import Report

MAX_STUDENTS = 500  # active seats
MAX_PENDING = 100  # seats waiting for approval, counted apart: a crowd of unapproved joins cannot fill the class
CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O or 1/I: read aloud and typed by hand

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS students (
    id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, token_hash TEXT NOT NULL UNIQUE, joined_at REAL NOT NULL,
    lesson INTEGER, passed INTEGER, total INTEGER, failing TEXT NOT NULL DEFAULT '[]',
    last_at REAL, progress_at REAL,
    tokens_in INTEGER NOT NULL DEFAULT 0, tokens_out INTEGER NOT NULL DEFAULT 0, requests INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS reports (
    id INTEGER PRIMARY KEY, student_id INTEGER NOT NULL REFERENCES students(id) ON DELETE CASCADE, report_id TEXT NOT NULL,
    at REAL NOT NULL, lesson INTEGER NOT NULL, passed INTEGER NOT NULL, score INTEGER NOT NULL,
    max_score INTEGER NOT NULL, seconds REAL, checks TEXT NOT NULL, UNIQUE (student_id, report_id));
"""
# Added since the first release: an older class file gets them on its next start.
SEAT_COLUMNS = {"state": "TEXT NOT NULL DEFAULT 'active'", "workspace": "TEXT", "reserved": "INTEGER NOT NULL DEFAULT 0"}
COLUMNS = "id, name, lesson, passed, total, failing, last_at, progress_at, tokens_in, tokens_out, requests, state, reserved"


class NameTaken(ValueError):
    pass


class ClassFull(ValueError):
    pass


class Unavailable(RuntimeError):
    """The database refused a read or write (full disk, I/O error): the reason, for a clean 503."""


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
    state: str = "active"  # or "pending": joined, waiting for the instructor's approval
    reserved: int = 0  # tokens held for relay requests still in flight

    @property
    def tokens(self) -> int:
        return self.tokens_in + self.tokens_out

    @property
    def pending(self) -> bool:
        return self.state == "pending"

    def stuck_for(self, now: float) -> float | None:
        """Seconds since this student last moved forward, while something still fails; None when not stuck."""
        if self.progress_at is None or not self.failing:
            return None
        return max(0.0, now - self.progress_at)


class Store:
    def __init__(self, path: Path | str):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=10)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA foreign_keys=ON")
        self._db.executescript(SCHEMA)
        have = {row[1] for row in self._db.execute("PRAGMA table_info(students)")}
        for column, kind in SEAT_COLUMNS.items():
            if column not in have:
                self._db.execute(f"ALTER TABLE students ADD COLUMN {column} {kind}")
        self._db.execute("CREATE UNIQUE INDEX IF NOT EXISTS students_workspace ON students(workspace)")
        self.code = self._meta("class_code", lambda: "-".join("".join(secrets.choice(CODE_ALPHABET) for _ in range(4)) for _ in range(2)))
        self.instructor_token = self._meta("instructor_token", lambda: secrets.token_urlsafe(24))

    def release_reservations(self) -> None:
        """Drop every hold on the budgets: called when the relay starts, as no request can be in flight then."""
        with self._write() as db:
            db.execute("UPDATE students SET reserved = 0 WHERE reserved != 0")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def is_code(self, code: str) -> bool:
        return hmac.compare_digest(code.strip().upper().encode(), self.code.encode())

    def is_instructor(self, token: str) -> bool:
        return hmac.compare_digest(token.encode(), self.instructor_token.encode())

    # Seats: one per student, one budget each.
    def join(self, name: str, token: str | None = None, workspace: str | None = None, pending: bool = False,
             pending_past: int | None = None) -> tuple[Student, str]:
        """A seat and a fresh token for it. The workspace that joined before gets its own seat back (renamed if the
        name changed, usage kept); a name already seated is only for the one holding its token. A new seat waits for
        approval if `pending`, or once `pending_past` seats are active (counted in the same transaction)."""
        with self._write() as db:
            named = db.execute("SELECT id FROM students WHERE name = ?", (name,)).fetchone()
            held = db.execute("SELECT id FROM students WHERE token_hash = ?", (_digest(token),)).fetchone() if token else None
            mine = db.execute("SELECT id FROM students WHERE workspace = ?", (workspace,)).fetchone() if workspace else None
            mine = mine or held
            if mine is not None:
                if named is not None and named != mine:
                    raise NameTaken(name)
                kept = token if held == mine else "class-" + secrets.token_urlsafe(24)
                db.execute("UPDATE students SET name = ?, token_hash = ?, workspace = coalesce(?, workspace) WHERE id = ?",
                           (name, _digest(kept), workspace, mine[0]))
                return self._student(db, mine[0]), kept
            if named is not None:
                raise NameTaken(name)
            if not pending and pending_past is not None:
                pending = db.execute("SELECT count(*) FROM students WHERE state = 'active'").fetchone()[0] >= pending_past
            state = "pending" if pending else "active"
            if db.execute("SELECT count(*) FROM students WHERE state = ?", (state,)).fetchone()[0] >= (MAX_PENDING if pending else MAX_STUDENTS):
                raise ClassFull("too many joins are waiting for approval" if pending else "this class is full")
            fresh = "class-" + secrets.token_urlsafe(24)
            cursor = db.execute("INSERT INTO students (name, token_hash, joined_at, workspace, state) VALUES (?, ?, ?, ?, ?)",
                                (name, _digest(fresh), time.time(), workspace, state))
            return self._student(db, cursor.lastrowid), fresh

    def seat(self, name: str) -> Student | None:
        with self._read() as db:
            row = db.execute(f"SELECT {COLUMNS} FROM students WHERE name = ?", (name,)).fetchone()
        return None if row is None else _row(row)

    def approve(self, name: str) -> bool:
        """Seat a pending join; ClassFull when the class's active seats are all taken."""
        with self._write() as db:
            if db.execute("SELECT count(*) FROM students WHERE state = 'active'").fetchone()[0] >= MAX_STUDENTS:
                raise ClassFull("this class is full")
            return db.execute("UPDATE students SET state = 'active' WHERE name = ? AND state = 'pending'", (name,)).rowcount == 1

    def rename(self, old: str, new: str) -> bool:
        with self._write() as db:
            if db.execute("SELECT 1 FROM students WHERE name = ?", (new,)).fetchone() and new != old:
                raise NameTaken(new)
            return db.execute("UPDATE students SET name = ? WHERE name = ?", (new, old)).rowcount == 1

    def remove(self, name: str) -> bool:
        """Free a seat: its token stops working at once, its reports go with it."""
        with self._write() as db:
            return db.execute("DELETE FROM students WHERE name = ?", (name,)).rowcount == 1

    def student_by_token(self, token: str) -> Student | None:
        digest = _digest(token)
        with self._read() as db:
            row = db.execute(f"SELECT {COLUMNS}, token_hash FROM students WHERE token_hash = ?", (digest,)).fetchone()
        return _row(row[:-1]) if row is not None and hmac.compare_digest(row[-1], digest) else None

    # Budgets: reserve the worst case before a relay request, settle with what it really used.
    def reserve(self, student: Student, need: int, budget: int) -> bool:
        """Hold `need` tokens of the student's budget, atomically; False (nothing held) when they do not fit."""
        with self._write() as db:
            return db.execute("UPDATE students SET reserved = reserved + ? WHERE id = ? AND tokens_in + tokens_out + reserved + ? <= ?",
                              (need, student.id, need, budget)).rowcount == 1

    def settle(self, student: Student, held: int, tokens_in: int, tokens_out: int, counted: bool = True) -> None:
        """Give back the `held` tokens and charge what the request really used (`counted`: it reached the model)."""
        with self._write() as db:
            db.execute("UPDATE students SET reserved = max(0, reserved - ?), tokens_in = tokens_in + ?, tokens_out = tokens_out + ?,"
                       " requests = requests + ? WHERE id = ?", (held, tokens_in, tokens_out, int(counted), student.id))

    def record(self, student: Student, report: Report, now: float | None = None) -> bool:
        """Store one report; False (and nothing changed) when this report id was already stored for this student."""
        now = time.time() if now is None else now
        failing = [check.id for check in report.checks if check.status != "passed"]
        passed = len(report.checks) - len(failing)
        with self._write() as db:
            cursor = db.execute(
                "INSERT OR IGNORE INTO reports (student_id, report_id, at, lesson, passed, score, max_score, seconds, checks)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (student.id, report.id, now, report.lesson, report.passed, report.score, report.max_score, report.seconds,
                 report.model_dump_json(include={"checks"}, exclude_none=True)))
            if cursor.rowcount == 0:
                return False
            lesson, passed_before, progress_at = db.execute(
                "SELECT lesson, passed, progress_at FROM students WHERE id = ?", (student.id,)).fetchone()
            moved = lesson is None or report.lesson != lesson or passed > (passed_before or 0)  # a step forward restarts "stuck for"
            db.execute("UPDATE students SET lesson = ?, passed = ?, total = ?, failing = ?, last_at = ?, progress_at = ? WHERE id = ?",
                       (report.lesson, passed, len(report.checks), json.dumps(failing), now, now if moved else progress_at, student.id))
            return True

    def students(self) -> list[Student]:
        with self._read() as db:
            return [_row(row) for row in db.execute(f"SELECT {COLUMNS} FROM students ORDER BY name")]

    def report_count(self) -> int:
        with self._read() as db:
            return db.execute("SELECT count(*) FROM reports").fetchone()[0]

    def report_ids(self) -> list[tuple[str, str]]:
        """(student name, report id) of every stored report: what a load test compares with what it sent."""
        with self._read() as db:
            return db.execute("SELECT s.name, r.report_id FROM reports r JOIN students s ON s.id = r.student_id").fetchall()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One transaction, committed whole or not at all; SQLite's own refusal comes out as `Unavailable`."""
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    yield self._db
                    self._db.execute("COMMIT")
                except BaseException:
                    if self._db.in_transaction:  # SQLite may have rolled back itself (a full disk does): nothing to undo
                        self._db.execute("ROLLBACK")
                    raise
            except sqlite3.OperationalError as problem:
                raise Unavailable(f"the class database {self.path} cannot be written: {problem}") from None

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                yield self._db
            except sqlite3.OperationalError as problem:
                raise Unavailable(f"the class database {self.path} cannot be read: {problem}") from None

    def _student(self, db: sqlite3.Connection, student_id: int) -> Student:
        return _row(db.execute(f"SELECT {COLUMNS} FROM students WHERE id = ?", (student_id,)).fetchone())

    def _meta(self, key: str, make) -> str:
        with self._write() as db:
            db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)", (key, make()))
            return db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()[0]


def _row(row: tuple) -> Student:
    return Student(row[0], row[1], row[2], row[3] or 0, row[4] or 0, tuple(json.loads(row[5])), *row[6:])


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()
