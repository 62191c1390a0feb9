"""`workshop class students [list|rename|remove|approve]`: the class's seats, in its database, served or not."""
from __future__ import annotations

import time
from pathlib import Path

import click

from grader.errors import WorkshopError

DB_OPTION = click.option("--db", default="class.sqlite", show_default=True, type=click.Path(dir_okay=False, path_type=Path),
                         help="The class's SQLite file (the one `workshop class serve --db` uses).")


@click.group("students", invoke_without_command=True)
@DB_OPTION
@click.pass_context
def students_group(context: click.Context, db: Path) -> None:
    """List the class's seats (one per student, one budget each), rename or remove them."""
    context.obj = db
    if context.invoked_subcommand is None:
        context.invoke(list_command, db=db)


@students_group.command("list")
@DB_OPTION
def list_command(db: Path) -> None:
    """Every seat: name, state, lesson, checks, last check, tokens used."""
    from grader.classroom.safe_text import for_terminal

    seats = _open(db).students()
    if not seats:
        click.echo(f"No one has joined the class in {db} yet.")
        return
    width = max(len(for_terminal(seat.name)) for seat in seats)
    click.echo(f"{'name':<{width}}  {'seat':<8} {'lesson':>6} {'checks':>7}  {'last check':<16} {'tokens':>10} {'requests':>8}")
    for seat in seats:
        last = time.strftime("%Y-%m-%d %H:%M", time.localtime(seat.last_at)) if seat.last_at else "never"
        lesson = "-" if seat.lesson is None else str(seat.lesson)
        checks = f"{seat.passed}/{seat.total}" if seat.lesson is not None else "-"
        click.echo(f"{for_terminal(seat.name):<{width}}  {seat.state:<8} {lesson:>6} {checks:>7}  {last:<16} {seat.tokens:>10,} {seat.requests:>8}")
    pending = sum(seat.pending for seat in seats)
    click.echo(f"{len(seats)} seats" + (f", {pending} waiting for approval (workshop class students approve NAME)" if pending else ""))


@students_group.command("rename")
@click.argument("old")
@click.argument("new")
@DB_OPTION
def rename_command(old: str, new: str, db: Path) -> None:
    """Rename a seat (its token, history and budget stay)."""
    from grader.classroom.payloads import Join
    from grader.classroom.safe_text import for_terminal
    from grader.classroom.store import NameTaken

    try:
        new = Join(name=new).name
    except ValueError:
        raise WorkshopError(f"{for_terminal(new)!r} is not a name: 1 to 40 printable characters, e.g. 'Ada L.'") from None
    try:
        done = _open(db).rename(old, new)
    except NameTaken:
        raise WorkshopError(f"{for_terminal(new)!r} is already a seat: remove it first, or choose another name") from None
    _found(done, old, db)
    click.echo(f"Renamed {for_terminal(old)!r} to {for_terminal(new)!r}.")


@students_group.command("remove")
@click.argument("name")
@DB_OPTION
def remove_command(name: str, db: Path) -> None:
    """Free a seat: its token stops working at once; its reports and usage go with it."""
    from grader.classroom.safe_text import for_terminal

    _found(_open(db).remove(name), name, db)
    click.echo(f"Removed {for_terminal(name)!r}: the seat is free, and its token no longer posts or relays.")


@students_group.command("approve")
@click.argument("name")
@DB_OPTION
def approve_command(name: str, db: Path) -> None:
    """Approve a seat waiting for it (as the board's Approve button does)."""
    from grader.classroom.safe_text import for_terminal

    from grader.classroom.store import ClassFull

    try:
        approved = _open(db).approve(name)
    except ClassFull as full:
        raise WorkshopError(f"{full}: remove a seat before approving {for_terminal(name)!r}") from None
    _found(approved, name, db, "waiting for approval ")
    click.echo(f"Approved {for_terminal(name)!r}.")


def _open(db: Path):
    from grader.classroom.store import Store

    if not db.is_file():
        raise WorkshopError(f"no class database at {db}: give the --db that `workshop class serve` uses")
    try:
        return Store(db)
    except Exception as problem:
        raise WorkshopError(f"{db} is not a class database ({problem}); give another --db") from None


def _found(done: bool, name: str, db: Path, kind: str = "") -> None:
    from grader.classroom.safe_text import for_terminal

    if not done:
        raise WorkshopError(f"no seat {kind}named {for_terminal(name)!r} in {db}: `workshop class students --db {db}` lists them")
