"""Serve an app with uvicorn on a socket bound first, so the port is known (and can be 0) before anything prints."""
from __future__ import annotations

import socket
import threading
import time
from contextlib import contextmanager
from typing import Iterator

import uvicorn


def bind(host: str, port: int) -> socket.socket:
    """A listening socket; OSError when the address is taken or not this machine's."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    return sock


def serve(app, sock: socket.socket, log_level: str = "warning") -> None:
    """Run until Ctrl-C (uvicorn handles the signal and shuts down cleanly)."""
    uvicorn.Server(uvicorn.Config(app, log_level=log_level)).run(sockets=[sock])


@contextmanager
def in_thread(app, host: str = "127.0.0.1") -> Iterator[str]:
    """Serve `app` on a free loopback port in a thread; yields its base URL and stops it on exit."""
    sock = bind(host, 0)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
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
