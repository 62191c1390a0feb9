"""`workshop class serve`: the live class board, and with --relay the API relay, on the instructor's machine."""
from __future__ import annotations

import os
import signal
import socket
from pathlib import Path

import click

from grader.errors import WorkshopError

DEFAULT_BUDGET = 500_000


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on; 0.0.0.0 lets students on the network join.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="Port to listen on (0: any free one).")
@click.option("--db", default="class.sqlite", show_default=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The class's SQLite file; serving again from it keeps the class code, the students and their history.")
@click.option("--relay", is_flag=True, help="Also relay /v1/messages for students' Rovers with the ANTHROPIC_API_KEY set here.")
@click.option("--upstream", default="https://api.anthropic.com", show_default=True, help="Where the relay forwards.")
@click.option("--budget", default=DEFAULT_BUDGET, show_default=True, type=click.IntRange(1), help="Tokens each student may use through the relay.")
def serve_command(host: str, port: int, db: Path, relay: bool, upstream: str, budget: int) -> None:
    """Serve the class board: who is stuck, on what, for how long."""
    api_key = os.environ.get("ANTHROPIC_API_KEY", "")
    if relay and not api_key:
        raise WorkshopError("--relay forwards with your key: set ANTHROPIC_API_KEY here first (students never see it)")
    if not upstream.startswith(("http://", "https://")):
        raise WorkshopError(f"--upstream {upstream} is not an http(s) URL; e.g. --upstream https://api.anthropic.com")
    from grader.classroom.board import create_app
    from grader.classroom.serving import bind, serve
    from grader.classroom.store import Store

    try:
        sock = bind(host, port)
    except OSError as problem:
        raise WorkshopError(f"cannot listen on {host}:{port} ({problem.strerror}); choose another --port, or --host 127.0.0.1") from None
    try:
        store = Store(db)
    except Exception as problem:  # sqlite3.DatabaseError and friends: a file that is not this board's
        sock.close()
        raise WorkshopError(f"{db} is not a class database ({problem}); give another --db") from None
    the_relay = None
    if relay:
        from grader.classroom.relay import Relay

        the_relay = Relay(store, api_key, budget, upstream)
    url = f"http://{_reachable(host)}:{sock.getsockname()[1]}"
    click.echo(f"Class board:   {url}/?token={store.instructor_token}   (open it on the projector; keep the token to yourself)")
    click.echo(f"Class code:    {store.code}")
    click.echo(f"Students run:  workshop join {url} {store.code} --name \"Their Name\"")
    if relay:
        click.echo(f"Relay:         on, forwarding to {upstream}, {budget:,} tokens per student")
    click.echo(f"Database:      {db.resolve()}   (Ctrl-C stops; serving again from it keeps the class)")
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # uvicorn re-sends the signal after shutting down: end as Ctrl-C does
    try:
        serve(create_app(store, the_relay), sock)
    except KeyboardInterrupt:
        pass  # uvicorn has already shut down cleanly; Ctrl-C is the normal way to stop
    finally:
        store.close()
    click.echo(f"Board stopped. `workshop class serve --db {db}` carries on with the same class.")


def _reachable(host: str) -> str:
    """The address students should type: this machine's LAN address when listening on every interface."""
    if host not in ("0.0.0.0", "::", ""):
        return f"[{host}]" if ":" in host else host
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("10.255.255.255", 1))  # UDP connect sends nothing; it only picks the outgoing interface
        return probe.getsockname()[0]
    except OSError:
        return socket.gethostname()
    finally:
        probe.close()
