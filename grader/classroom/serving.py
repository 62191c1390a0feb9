"""Serve an app with uvicorn on a socket bound first, so the port is known (and can be 0) before anything prints.

A board that stays up in a room that tests it: each connection must send a whole request (headers and
body) within HEADER_TIMEOUT, sits idle between requests for at most KEEP_ALIVE, and the number of
connections is capped below the open-file limit (raised at start as far as the system allows). At the
cap, room is made by closing the connection that has waited longest without a request in progress, or
else the one whose request has been arriving longest (a head without its whole body), and only if every
request is whole and being answered, the newcomer: a crowd of half-open or trickling connections, from any
number of addresses, cannot lock out the students or the instructor's page, whose request is whole at once.
One address may hold at most PER_ADDRESS connections (the same order of closing applies to its own).
Forwarded-for headers are not trusted: the address is the socket's.
"""
from __future__ import annotations

import logging
import socket
import sys
import threading
import time
from contextlib import contextmanager
from typing import Iterator

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

HEADER_TIMEOUT = 10.0  # seconds from a connection (or the end of its last answer) to a request's whole head and body
KEEP_ALIVE = 5  # seconds an idle keep-alive connection stays open
FILES_KEPT_FREE = 64  # open files left for the database, logs and the relay's own (counted separately)
PER_ADDRESS = 32  # connections one address may hold: a student's Rover, checks and browser use a handful
BACKLOG = 256  # connections accepted in one go before the cap sees them: kept free twice over


def raise_open_file_limit(wanted: int = 65536) -> int:
    """Lift the soft limit on open files towards the hard one (macOS starts at 256); the soft limit now in force."""
    try:
        import resource
    except ImportError:  # Windows: no such limit to raise
        return 8192
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = min(wanted, 10240 if sys.platform == "darwin" else wanted)  # macOS refuses more than OPEN_MAX per process
    target = target if hard == resource.RLIM_INFINITY else min(target, hard)
    if target > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    return soft


def connection_cap(open_files: int, relay_connections: int = 0) -> int:
    """How many client connections fit below the open-file limit, with room left for everything else."""
    burst = 2 * min(BACKLOG, open_files // 8)  # on a tiny limit, a tiny burst: asyncio pauses accepting when it overruns
    return max(16, min(4096, open_files - FILES_KEPT_FREE - burst - relay_connections))


def guarded(max_connections: int, header_timeout: float = HEADER_TIMEOUT, per_address: int = PER_ADDRESS) -> type[H11Protocol]:
    """uvicorn's h11 protocol with a whole-request timeout, a connection cap and a cap per client address."""
    by_address: dict[str, set] = {}  # this server's open connections by their peer's address

    class Guarded(H11Protocol):
        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._waiting_since, self._header_timer, self._cycle_before = self.loop.time(), None, None
            self._start_header_timer()
            peer = transport.get_extra_info("peername")
            self._address = str(peer[0]) if isinstance(peer, tuple) and peer else ""
            mine = by_address.setdefault(self._address, set())
            mine.add(self)
            if len(mine) > per_address and _open_count(mine) > per_address:
                _make_room(self, mine)
            elif len(self.connections) > max_connections and _open_count(self.connections) > max_connections:
                _make_room(self, self.connections)

        def data_received(self, data: bytes) -> None:
            if self._header_timer is None and not self._busy():
                self._start_header_timer()  # the first bytes of the next request on a kept-alive connection
            super().data_received(data)

        def on_response_complete(self) -> None:
            self._cancel_header_timer()
            self._waiting_since = self.loop.time()
            super().on_response_complete()

        def connection_lost(self, exc) -> None:
            self._cancel_header_timer()
            mine = by_address.get(self._address)
            if mine is not None:
                mine.discard(self)
                if not mine:
                    del by_address[self._address]
            super().connection_lost(exc)

        def _busy(self) -> bool:
            return self.cycle is not None and not self.cycle.response_complete

        def _arriving(self) -> bool:
            """Its request's head is in, its body is not all in yet."""
            return self.conn.their_state is h11.SEND_BODY

        def _start_header_timer(self) -> None:
            self._cycle_before = self.cycle
            self._header_timer = self.loop.call_later(header_timeout, self._headers_too_slow)

        def _cancel_header_timer(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _headers_too_slow(self) -> None:
            self._header_timer = None
            if (self.cycle is self._cycle_before or self._arriving()) and not self.transport.is_closing():
                self.transport.close()  # no new request began, or its body is still on its way

    return Guarded


def _open_count(connections: set) -> int:
    """Connections not already closing (a closed one stays in the set until asyncio reports it lost)."""
    return sum(1 for other in connections if not other.transport.is_closing())


def _make_room(newcomer: H11Protocol, connections: set) -> None:
    """Close the longest idle connection, else the one whose request has been arriving longest, else the newcomer."""
    others = [other for other in connections if other is not newcomer and not other.transport.is_closing()]
    idle = [other for other in others if not other._busy()]
    arriving = [other for other in others if other._busy() and other._arriving()]
    victims = idle or arriving
    victim = min(victims, key=lambda other: other._waiting_since) if victims else newcomer
    victim.transport.close()


def config(app, max_connections: int, log_level: str = "warning", header_timeout: float = HEADER_TIMEOUT,
           per_address: int = PER_ADDRESS, **extra) -> uvicorn.Config:
    return uvicorn.Config(app, http=guarded(max_connections, header_timeout, per_address), log_level=log_level,
                          timeout_keep_alive=KEEP_ALIVE, backlog=BACKLOG, ws="none",
                          proxy_headers=False, **extra)  # X-Forwarded-For is anyone's to write: limits go by the socket's address


def _no_accept_noise(record: logging.LogRecord) -> bool:
    """asyncio's traceback for an accept that hit the open-file limit (and for its retry, if the server stopped
    meanwhile): it retries by itself, and the cap makes room."""
    message = record.getMessage()
    return "socket.accept() out of system resource" not in message and "BaseSelectorEventLoop._start_serving" not in message


def bind(host: str, port: int) -> socket.socket:
    """A listening socket; OSError when the address is taken or not this machine's."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(BACKLOG)
    except OSError:
        sock.close()
        raise
    return sock


def serve(app, sock: socket.socket, max_connections: int, log_level: str = "warning", per_address: int = PER_ADDRESS) -> None:
    """Run until Ctrl-C (uvicorn handles the signal and shuts down cleanly)."""
    logging.getLogger("asyncio").addFilter(_no_accept_noise)
    uvicorn.Server(config(app, max_connections, log_level, per_address=per_address)).run(sockets=[sock])


@contextmanager
def in_thread(app, host: str = "127.0.0.1", max_connections: int = 1000, header_timeout: float = HEADER_TIMEOUT,
              per_address: int = PER_ADDRESS) -> Iterator[str]:
    """Serve `app` on a free loopback port in a thread; yields its base URL and stops it on exit."""
    sock = bind(host, 0)
    server = uvicorn.Server(config(app, max_connections, header_timeout=header_timeout, per_address=per_address, lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        if not server.started:
            raise RuntimeError("the test server did not start within 10 s")
        yield f"http://{host}:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
