"""`workshop class serve`: the live class board, and with --relay the API relay, on the instructor's machine."""
from __future__ import annotations

import ipaddress
import os
import signal
import socket
import time
from pathlib import Path

import click

from grader.commands.screen import say

from grader.errors import WorkshopError

DEFAULT_BUDGET = 500_000


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on; 0.0.0.0 lets students on the network join.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="Port to listen on (0: any free one).")
@click.option("--db", default="class.sqlite", show_default=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The class's SQLite file; serving again from it keeps the class code, the students and their history.")
@click.option("--relay", is_flag=True, help="Also relay /v1/messages for students' Rovers with the ANTHROPIC_API_KEY set here.")
@click.option("--upstream", default="https://api.anthropic.com", show_default=True, help="Where the relay forwards.")
@click.option("--budget", default=DEFAULT_BUDGET, show_default=True, type=click.IntRange(1), help="Tokens each student (seat) may use through the relay.")
@click.option("--roster", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="A file of names, one a line: only they may join.")
@click.option("--approve", is_flag=True, help="Hold each join (each one not on --roster) until you approve it on the board.")
@click.option("--joins-per-minute", default=6, show_default=True, type=click.IntRange(0),
              help="Joins allowed per address a minute; the whole class may make 120 a minute (0: no limit on either).")
@click.option("--class-size", type=click.IntRange(1, 500),
              help="Seats taken without your approval; later joins wait for it on the board [default: the roster's length, or 60].")
@click.option("--connections-per-address", default=32, show_default=True, type=click.IntRange(1),
              help="Connections one address may hold open (raise it when students reach the board through one NAT or proxy).")
def serve_command(host: str, port: int, db: Path, relay: bool, upstream: str, budget: int, roster: Path | None, approve: bool,
                  joins_per_minute: int, class_size: int | None, connections_per_address: int) -> None:
    """Serve the class board: who is stuck, on what, for how long."""
    api_key = os.environ.get("ANTHROPIC_API_KEY", "")
    if relay and not api_key:
        raise WorkshopError("--relay forwards with your key: set ANTHROPIC_API_KEY here first (students never see it)")
    if not upstream.startswith(("http://", "https://")):
        raise WorkshopError(f"--upstream {upstream} is not an http(s) URL; e.g. --upstream https://api.anthropic.com")
    from grader.classroom.board import create_app
    from grader.classroom.safe_text import for_terminal
    from grader.classroom.seats import CLASS_JOINS_PER_MINUTE, JoinRate, Seats, read_roster
    from grader.classroom.serving import bind, connection_cap, raise_open_file_limit, serve
    from grader.classroom.store import Store

    try:
        names = read_roster(roster) if roster else None
    except (OSError, ValueError) as problem:
        raise WorkshopError(f"--roster: {problem}") from None
    try:
        sock = bind(host, port)
    except OSError as problem:
        raise WorkshopError(f"cannot listen on {host}:{port} ({problem.strerror}); choose another --port, or --host 127.0.0.1") from None
    try:
        store = Store(db)
    except Exception as problem:  # sqlite3.DatabaseError and friends: a file that is not this board's
        sock.close()
        raise WorkshopError(f"{db} is not a class database ({problem}); give another --db") from None
    open_files = raise_open_file_limit()
    relay_connections = min(100, max(8, open_files // 8)) if relay else 0
    the_relay = None
    if relay:
        from grader.classroom.relay import Relay

        the_relay = Relay(store, api_key, budget, upstream, connections=relay_connections)
    seats = Seats(store, names, approve, JoinRate(joins_per_minute), class_size=class_size,
                  class_rate=JoinRate(CLASS_JOINS_PER_MINUTE if joins_per_minute else 0, per_hour=0),
                  tell=lambda line: click.echo(f"{time.strftime('%H:%M:%S')}  {for_terminal(line)}"))
    bound = sock.getsockname()[1]
    # Commands and addresses each on a line of their own, never wrapped, so they copy whole; the prose wraps.
    click.echo(_prose("Class board:   open it on the projector, and keep the token to yourself:"))
    click.echo(f"  http://{_on_this_machine(host)}:{bound}/?token={store.instructor_token}")
    click.echo(f"Class code:    {store.code}")
    click.echo(_students_line(host, bound, store.code, db))
    click.echo(_prose("Seats:         " + (f"the {len(names)} names on {roster}" if names else "anyone with the code")
               + (", others once you approve them on the board" if names and approve else " once you approve them on the board" if approve else "")
               + (f"; {joins_per_minute} joins a minute per address, {CLASS_JOINS_PER_MINUTE} from the class" if joins_per_minute else "")
               + (f"; past {seats.class_size} seats, a join waits for your approval (--class-size)" if not approve else "")))
    if relay:
        click.echo(_prose(f"Relay:         on, forwarding to {upstream}, {budget:,} tokens per seat"))
    click.echo(_prose("Database:      Ctrl-C stops; serving again from this file keeps the class:"))
    click.echo(f"  {db.resolve()}")
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # uvicorn re-sends the signal after shutting down: end as Ctrl-C does
    try:
        serve(create_app(store, the_relay, seats), sock, connection_cap(open_files, relay_connections), per_address=connections_per_address)
    except KeyboardInterrupt:
        click.echo()  # uvicorn has already shut down cleanly; Ctrl-C is the normal way to stop. Not after the ^C:
    finally:
        store.close()
    say(f"Board stopped. `workshop class serve --db {db}` carries on with the same class.")


def _students_line(host: str, port: int, code: str, db: Path) -> str:
    """What students run, the command on a line of its own; on loopback, first the command that lets them."""
    lan = lan_address()
    join = f'  workshop join http://{lan or "THIS-MACHINE"}:{port} {code} --name "Their Name"'
    if _loopback(host):
        again = f"  workshop class serve --host 0.0.0.0 --port {port}" + (f" --db {db}" if str(db) != "class.sqlite" else "")
        return "\n".join([_prose(f"Students:      cannot reach {host} (this machine only); for the room, serve:"), again,
                          _prose("               and they run" + ("" if lan else " (this machine's LAN address: none found)") + ":"),
                          join])
    shown = lan if host in ("0.0.0.0", "::", "") else _shown(host)
    return f'Students run:\n  workshop join http://{shown or "THIS-MACHINE"}:{port} {code} --name "Their Name"'


def _prose(line: str) -> str:
    """A line of words wrapped at the terminal's width, its continuation under the text after the label."""
    import shutil
    import textwrap

    width = max(40, shutil.get_terminal_size().columns - 1)
    return textwrap.fill(line, width, subsequent_indent=" " * 15, break_long_words=False, break_on_hyphens=False)


def lan_address() -> str | None:
    """This machine's address on its network, found without sending a packet (a UDP connect only picks a route)."""
    for private in ("10.255.255.255", "192.168.255.255", "172.31.255.255"):
        probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            probe.connect((private, 9))
            address = probe.getsockname()[0]
        except OSError:
            continue
        finally:
            probe.close()
        if not ipaddress.ip_address(address).is_loopback and address != "0.0.0.0":
            return address
    return None


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _shown(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _on_this_machine(host: str) -> str:
    """Where the instructor's own browser finds the board."""
    return {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "[::1]"}.get(host, _shown(host))
