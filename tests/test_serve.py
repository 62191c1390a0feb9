"""`workshop class serve` as the instructor runs it: what it prints, where students can reach it, what it refuses."""
from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import httpx
from click.testing import CliRunner

from grader.classroom.store import Store
from grader.cli import main

PATIENCE = 60  # seconds to wait for an answer: on two cores shared with a dozen gradings, 5 s was sometimes too few


def stop(server: subprocess.Popen) -> str:
    """Ctrl-C, then what it printed; killed if it does not stop in time, so no server outlives the test."""
    server.send_signal(signal.SIGINT)
    try:
        return server.communicate(timeout=PATIENCE)[0]
    except subprocess.TimeoutExpired:
        server.kill()
        server.communicate()
        raise

def test_serve_prints_the_board_url_and_the_join_line_and_keeps_the_class(tmp_path):
    from grader.commands.class_serve import lan_address

    db = tmp_path / "class.sqlite"

    def start() -> tuple[subprocess.Popen, list[str]]:
        server = subprocess.Popen([sys.executable, "-m", "grader.cli", "class", "serve", "--port", "0", "--db", str(db)],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        lines = []
        while not lines or not lines[-1].endswith("keeps the class:"):  # the banner's last line but one
            lines.append(server.stdout.readline().rstrip("\n"))
        lines.append(server.stdout.readline().rstrip("\n"))  # the database's path
        return server, lines

    server, lines = start()
    try:
        url = lines[1].strip()
        base, token = url.split("/?token=")
        port, code = base.rsplit(":", 1)[1], lines[2].split()[2]
        assert lines[0].startswith("Class board:") and base.startswith("http://127.0.0.1:")
        # On loopback no student can reach it: it says so, with the command for the room and the join line it will take,
        # each command on a line of its own (never wrapped: they copy whole).
        assert lines[3].startswith("Students:      cannot reach 127.0.0.1 (this machine only)")
        commands = [line for line in lines if line.startswith("  workshop ")]
        assert commands[0] == f"  workshop class serve --host 0.0.0.0 --port {port} --db {db}"
        assert commands[1].startswith(f"  workshop join http://{lan_address() or 'THIS-MACHINE'}:{port} {code} --name")
        assert any(line.startswith("Seats:         anyone with the code; 6 joins a minute per address") for line in lines)
        assert httpx.get(f"{base}/api/board", params={"token": token}, timeout=PATIENCE).status_code == 200
        assert httpx.post(f"{base}/api/join", json={"name": "Ada"}, headers={"X-Class-Code": code}, timeout=PATIENCE).status_code == 201
        assert server.stdout.readline().split()[1:] == ["Ada", "joined"]  # after the time: the instructor sees who joins
    finally:
        out = stop(server)
    assert server.returncode == 0 and "Board stopped" in out and "Traceback" not in out
    server, lines = start()
    try:
        assert lines[2].split()[2] == code and token in lines[1]
    finally:
        stop(server)
    assert Store(db).students()[0].name == "Ada"


def test_bound_to_every_address_the_join_line_names_the_lan_address(monkeypatch):
    from grader.commands import class_serve

    monkeypatch.setattr(class_serve, "lan_address", lambda: "192.168.1.20")
    line = class_serve._students_line("0.0.0.0", 8765, "ABCD-EFGH", Path("class.sqlite"))
    assert line == 'Students run:\n  workshop join http://192.168.1.20:8765 ABCD-EFGH --name "Their Name"'
    line = class_serve._students_line("127.0.0.1", 8765, "ABCD-EFGH", Path("class.sqlite"))
    assert "cannot reach 127.0.0.1" in line and "\n  workshop class serve --host 0.0.0.0 --port 8765\n" in line
    assert line.endswith('\n  workshop join http://192.168.1.20:8765 ABCD-EFGH --name "Their Name"')
    monkeypatch.setattr(class_serve, "lan_address", lambda: None)
    assert "LAN address: none found" in class_serve._students_line("::1", 8765, "ABCD-EFGH", Path("class.sqlite"))


def test_the_lan_address_is_found_without_sending_a_packet(monkeypatch):
    """A UDP connect only picks a route: the probe may connect, and must never send."""
    import socket as sockets

    from grader.commands.class_serve import lan_address

    sent = []

    class Probe(sockets.socket):
        def send(self, *args, **kwargs):
            sent.append(args)

        sendto = sendall = send

    monkeypatch.setattr(sockets, "socket", Probe)
    address = lan_address()
    assert sent == [] and (address is None or not address.startswith("127."))


def test_serve_refuses_a_relay_without_a_key_and_a_busy_port(tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    done = CliRunner().invoke(main, ["class", "serve", "--relay", "--db", str(tmp_path / "c.sqlite")])
    assert done.exit_code == 2 and "set ANTHROPIC_API_KEY" in done.output and "Traceback" not in done.output
    from grader.classroom.serving import bind

    busy = bind("127.0.0.1", 0)
    try:
        done = CliRunner().invoke(main, ["class", "serve", "--port", str(busy.getsockname()[1]), "--db", str(tmp_path / "c.sqlite")])
    finally:
        busy.close()
    assert done.exit_code == 2 and "choose another --port" in done.output


def test_serve_refuses_a_file_that_is_not_a_class_database(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("not a database, just notes " * 100)
    done = CliRunner().invoke(main, ["class", "serve", "--port", "0", "--db", str(notes)])
    assert done.exit_code == 2 and "is not a class database" in done.output and "Traceback" not in done.output
    assert notes.read_text().startswith("not a database")
