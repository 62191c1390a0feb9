"""The class board under a room's load, relay streams running beside the posts, and what the post costs `workshop check`.

    python bench/board_load.py [--students 300] [--interval 2] [--duration 60] [--streams 50] [--check-runs 0]

1. `workshop class serve --relay` in its own process on 127.0.0.1, forwarding to a fake Messages API on
   127.0.0.1 that streams each answer over about 3 s and spends every token it may (usage = max_tokens,
   reported in message_delta, as a LiteLLM proxy does). N students join, then each posts a lesson-4
   summary every INTERVAL seconds for DURATION seconds (and re-sends its first post once, as a retry
   would), while the instructor's page polls the board and STREAMS streaming relay requests run, five at
   a time per relay student (each may use 100,000 tokens of a 500,000 budget: some must be refused).
   Prints post latency (p50, p99, max; target p99 < 100 ms), the server's CPU, what was stored against
   what was sent (target: 0 lost, none twice), and each relay student's usage against the budget
   (target: none over by more than one request's max_tokens).
2. With --check-runs N: `workshop check --json` in a lesson-1 workspace, not joined, joined with the board
   down, with a board that accepts and never answers, and with the board up (median wall time of each).
Bounded: N x DURATION/INTERVAL posts, the load phase capped at DURATION + 60 s; loopback only.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import random
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import uvicorn
from fastapi import FastAPI, Request  # the fake upstream's (its routes' annotations are looked up here)
from fastapi.responses import StreamingResponse

from grader.course import kit


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


BUDGET, MAX_TOKENS, PER_STUDENT = 500_000, 100_000, 5  # each relay student runs 5 streams at once: only 4 can fit


def start_board(db: Path, *extra: str) -> tuple[subprocess.Popen, str, str, str]:
    server = subprocess.Popen([sys.executable, "-m", "grader.cli", "class", "serve", "--port", "0", "--db", str(db), "--joins-per-minute", "0",
                               "--connections-per-address", "5000", "--class-size", "500", *extra],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env={**os.environ, "ANTHROPIC_API_KEY": "sk-bench"})
    server.stdout.readline()  # "Class board: open it on the projector…", then the address on a line of its own
    address, code = server.stdout.readline().split(), server.stdout.readline().split()
    base, token = address[0].split("/?token=")
    return server, base, code[2], token


def fake_upstream():
    """A Messages API that streams each answer over ~3 s and spends all of max_tokens, reported only in message_delta."""
    upstream = FastAPI()

    @upstream.post("/v1/messages")
    async def messages(request: Request) -> StreamingResponse:
        body = await request.json()

        async def events():
            start = {"type": "message_start", "message": {"id": "msg_b", "type": "message", "role": "assistant", "model": "m", "content": [],
                                                          "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 0, "output_tokens": 0}}}
            yield f"event: message_start\ndata: {json.dumps(start)}\n\n".encode()
            for _ in range(30):
                await asyncio.sleep(0.1)
                delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "word " * 20}}
                yield f"event: content_block_delta\ndata: {json.dumps(delta)}\n\n".encode()
            usage = {"input_tokens": 12, "output_tokens": body["max_tokens"]}
            yield f"event: message_delta\ndata: {json.dumps({'type': 'message_delta', 'delta': {'stop_reason': 'max_tokens'}, 'usage': usage})}\n\n".encode()
            yield b'event: message_stop\ndata: {"type": "message_stop"}\n\n'

        return StreamingResponse(events(), media_type="text/event-stream")

    return upstream


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def summary_payload() -> dict:
    checks = [{"id": check.id, "lesson": check.lesson, "status": random.choice(["passed", "passed", "failed"]), "seconds": 0.12}
              for number in range(5) for check in kit.lesson(number).checks]
    return {"id": os.urandom(16).hex(), "lesson": 4, "passed": False, "score": 30, "max_score": len(checks), "checks": checks}


class Connection:
    """One keep-alive HTTP/1.1 connection on asyncio streams: a client light enough that the board, not the
    bench, is what gets measured (httpx costs ~3 ms of CPU a request, which on two shared cores skews the figures)."""

    def __init__(self, host: str, port: int):
        self.host, self.port = host, port
        self.reader = self.writer = None

    async def request(self, method: str, path: str, headers: dict[str, str], body: bytes = b"") -> tuple[int, bytes]:
        """One request; sent again once on a new connection when the board had closed this one as idle (as any client does)."""
        try:
            return await self._exchange(method, path, headers, body)
        except (asyncio.IncompleteReadError, ConnectionError):
            self.close()
            self.reader = self.writer = None
            return await self._exchange(method, path, headers, body)

    async def _exchange(self, method: str, path: str, headers: dict[str, str], body: bytes) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        head = f"{method} {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Length: {len(body)}\r\n"
        head += "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        self.writer.write(head.encode() + b"\r\n" + body)
        status_line, *lines = (await self.reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        fields = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines if line)}
        content = await self.reader.readexactly(int(fields.get("content-length", 0)))
        return int(status_line.split()[1]), content

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


async def load(base: str, code: str, token: str, args) -> dict:
    students, interval, duration = args.students, args.interval, args.duration
    rounds = int(duration / interval)
    host, port = base.removeprefix("http://").split(":")
    latencies: list[float] = []
    board_reads: list[float] = []
    sent: set[tuple[str, str]] = set()
    statuses: dict[int, int] = {}
    streamed: dict[int, int] = {}
    connections = [Connection(host, int(port)) for _ in range(students + 1)]
    tokens = {}
    for number, connection in enumerate(connections[:students]):
        _, answer = await connection.request("POST", "/api/join", {"X-Class-Code": code, "Content-Type": "application/json"},
                                             json.dumps({"name": f"student {number:03}", "workspace": f"{number:032x}"}).encode())
        tokens[f"student {number:03}"] = (connection, json.loads(answer)["token"])
    stopping = time.monotonic() + duration

    async def student(name: str) -> None:
        connection, student_token = tokens[name]
        headers = {"X-Class-Code": code, "Authorization": f"Bearer {student_token}", "Content-Type": "application/json"}
        await asyncio.sleep(random.uniform(0, interval))
        first = None
        for round_ in range(rounds):
            if time.monotonic() > stopping:
                break
            payload = summary_payload()
            body = json.dumps(payload).encode()
            first = first or body
            started = time.perf_counter()
            status, _ = await connection.request("POST", "/api/report", headers, body)
            latencies.append(time.perf_counter() - started)
            statuses[status] = statuses.get(status, 0) + 1
            sent.add((name, payload["id"]))
            if round_ == 1:  # the retry of a post that did arrive: must not be stored twice
                status, _ = await connection.request("POST", "/api/report", headers, first)
                statuses[status] = statuses.get(status, 0) + 1
            await asyncio.sleep(interval - (time.perf_counter() - started) % interval)

    async def instructor() -> None:
        while time.monotonic() < stopping:
            started = time.perf_counter()
            await connections[-1].request("GET", "/api/board", {"Authorization": f"Bearer {token}"})
            board_reads.append(time.perf_counter() - started)
            await asyncio.sleep(interval)

    relay_students = [student_token for _, student_token in list(tokens.values())[: max(1, args.streams // PER_STUDENT)]]
    streams = multiprocessing.get_context("fork").Queue()
    streaming = multiprocessing.get_context("fork").Process(target=stream_side, args=(base, relay_students, args.streams, duration, streams))
    streaming.start()  # its own process: the streams' client work does not slow the posters' clock
    try:
        await asyncio.wait_for(asyncio.gather(instructor(), *(student(name) for name in tokens)), duration + 60)
    except asyncio.TimeoutError:
        print(f"  (the load did not finish within {duration + 60:g} s: stopped; figures below are what was done)")
    finally:
        for connection in connections:
            connection.close()
    streamed = streams.get(timeout=120)
    streaming.join(30)
    return {"latencies": latencies, "sent": sent, "statuses": statuses, "board_reads": board_reads, "streamed": streamed,
            "relay_students": len(relay_students)}


def stream_side(base: str, relay_students: list[str], count: int, duration: float, results) -> None:
    """STREAMS streaming relay requests at once, each student's five side by side, until DURATION is over."""
    streamed: dict[object, int] = {}
    stopping = time.monotonic() + duration

    async def streamer(http: httpx.AsyncClient, student_token: str) -> None:
        body = {"model": "m", "max_tokens": MAX_TOKENS, "stream": True, "messages": [{"role": "user", "content": "go on"}]}
        while time.monotonic() < stopping:
            try:
                async with http.stream("POST", "/v1/messages", json=body, headers={"x-api-key": student_token}) as answer:
                    await answer.aread()
            except httpx.TransportError as problem:  # e.g. a kept-alive connection the board closed as it was reused
                streamed[type(problem).__name__] = streamed.get(type(problem).__name__, 0) + 1
                continue
            streamed[answer.status_code] = streamed.get(answer.status_code, 0) + 1
            if answer.status_code != 200:
                await asyncio.sleep(1)  # refused: the budget is spent (or held), as a client would back off

    async def everyone() -> None:
        async with httpx.AsyncClient(base_url=base, timeout=60, limits=httpx.Limits(max_connections=count + 10)) as http:
            await asyncio.gather(*(streamer(http, relay_students[index % len(relay_students)]) for index in range(count)))

    asyncio.run(everyone())
    results.put(streamed)


def upstream_side(sock) -> None:
    from grader.classroom.serving import config

    uvicorn.Server(config(fake_upstream(), 1000, per_address=5000)).run(sockets=[sock])


def bench_load(args, scratch: Path) -> None:
    from grader.classroom.serving import bind

    db = scratch / "class.sqlite"
    listening = bind("127.0.0.1", 0)
    upstream = multiprocessing.get_context("fork").Process(target=upstream_side, args=(listening,), daemon=True)
    upstream.start()  # the fake upstream in a process of its own too
    try:
        server, base, code, token = start_board(db, "--relay", "--upstream", f"http://127.0.0.1:{listening.getsockname()[1]}", "--budget", str(BUDGET))
        try:
            cpu_before, wall_before = cpu_seconds(server.pid), time.monotonic()
            result = asyncio.run(load(base, code, token, args))
            cpu = cpu_seconds(server.pid) - cpu_before
            wall = time.monotonic() - wall_before
        finally:
            server.send_signal(signal.SIGINT)
            out, _ = server.communicate(timeout=30)
    finally:
        upstream.terminate()
        upstream.join(10)
        listening.close()
    with sqlite3.connect(db) as stored_db:
        stored = stored_db.execute("SELECT s.name, r.report_id FROM reports r JOIN students s ON s.id = r.student_id").fetchall()
        usage = stored_db.execute("SELECT tokens_in + tokens_out, requests FROM students WHERE requests > 0").fetchall()
    latencies = result["latencies"]
    posts = len(latencies)
    print(f"board load: {args.students} students, a post every {args.interval:g} s for {args.duration:g} s, "
          f"{args.streams} relay streams running: {posts} posts in {wall:.1f} s ({posts / wall:.1f}/s), answers {dict(sorted(result['statuses'].items()))}")
    print(f"  post latency  p50 {1000 * statistics.median(latencies):.1f} ms   p99 {1000 * percentile(latencies, 0.99):.1f} ms"
          f"   max {1000 * max(latencies):.1f} ms   (target: p99 < 100 ms)")
    reads = result["board_reads"]
    print(f"  board read ({args.students} rows) p50 {1000 * statistics.median(reads):.1f} ms   max {1000 * max(reads):.1f} ms")
    print(f"  server CPU {cpu:.1f} s over {wall:.1f} s ({100 * cpu / wall:.0f}% of one core)")
    lost = result["sent"] - set(stored)
    print(f"  stored {len(stored)} of {len(result['sent'])} sent; lost {len(lost)}, stored twice {len(stored) - len(set(stored))}, "
          f"deliberate re-sends {args.students} (answered 200, not stored)   (target: 0 lost)")
    worst = max((used for used, _ in usage), default=0)
    print(f"  relay: {sum(result['streamed'].values())} streams ({result['streamed']}) for {result['relay_students']} "
          f"students, {PER_STUDENT} at once each, max_tokens {MAX_TOKENS:,}; most used by one student {worst:,} of {BUDGET:,} "
          f"(over by {max(0, worst - BUDGET):,}; target: at most {MAX_TOKENS:,})")
    if "Traceback" in out:
        print("  the board logged a traceback:\n" + out[-3000:])


def bench_check_cost(runs: int, scratch: Path) -> None:
    from grader.classroom.serving import bind
    from grader.course.render import render

    workspace = render(1, scratch / "ws", True)
    subprocess.run(["git", "init", "-q"], cwd=workspace, check=True)
    joined = workspace / ".git" / "workshop-class.json"
    server, base, code, _ = start_board(scratch / "cost.sqlite")
    silent = bind("127.0.0.1", 0)
    closed = bind("127.0.0.1", 0)
    down = f"http://127.0.0.1:{closed.getsockname()[1]}"
    closed.close()
    try:
        student = httpx.post(f"{base}/api/join", json={"name": "timed"}, headers={"X-Class-Code": code}).json()["token"]
        states = {"not joined": None, "board down": down, "board silent": f"http://127.0.0.1:{silent.getsockname()[1]}", "board up": base}
        times: dict[str, list[float]] = {state: [] for state in states}
        for _ in range(runs):  # the states take turns, so a busy moment on the machine falls on all of them alike
            for state, url in states.items():
                joined.unlink(missing_ok=True)
                if url:
                    joined.write_text(json.dumps({"url": url, "code": code, "name": "timed", "token": student, "relay": False}))
                started = time.perf_counter()
                subprocess.run([sys.executable, "-m", "grader.cli", "check", "--json"], cwd=workspace, capture_output=True)
                times[state].append(time.perf_counter() - started)
        for state, taken in times.items():
            print(f"check cost, {state:>12}: median {statistics.median(taken):.3f} s  (min {min(taken):.3f}, max {max(taken):.3f}, {runs} runs)")
        print(f"  the hand-off itself (share_with_class, in process), board silent: {hand_off(workspace, states['board silent'], code, student)}")
        time.sleep(1.5)  # let the last posters finish before the board stops
        reports = sqlite3.connect(scratch / "cost.sqlite").execute("SELECT count(*) FROM reports").fetchone()[0]
        print(f"  reports the board got while up: {reports} of {runs}")
    finally:
        silent.close()
        server.send_signal(signal.SIGINT)
        server.communicate(timeout=20)


def hand_off(workspace: Path, url: str, code: str, token: str, calls: int = 20) -> str:
    """What `workshop check` waits for: starting the poster, not the post."""
    from grader.classroom.report import share_with_class
    from grader.grading.grade import Grade
    from grader.grading.runner import Outcome

    (workspace / ".git" / "workshop-class.json").write_text(json.dumps({"url": url, "code": code, "name": "timed", "token": token}))
    result = Grade(4, [Outcome(check, "failed") for number in range(5) for check in kit.lesson(number).checks])
    here, times, posters = Path.cwd(), [], []
    os.chdir(workspace)
    try:
        for _ in range(calls):
            started = time.perf_counter()
            posters.append(share_with_class(result))
            times.append(time.perf_counter() - started)
    finally:
        os.chdir(here)
    for poster in posters:
        poster.wait(10)
    return f"median {1000 * statistics.median(times):.1f} ms, max {1000 * max(times):.1f} ms over {calls} calls"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=300)
    parser.add_argument("--interval", type=float, default=2.0)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--streams", type=int, default=50, help="streaming relay requests running at once")
    parser.add_argument("--check-runs", type=int, default=0, help="runs of `workshop check` per state (0 skips)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="board-bench-") as scratch:
        bench_load(args, Path(scratch))
        if args.check_runs:
            bench_check_cost(args.check_runs, Path(scratch))


if __name__ == "__main__":
    main()
