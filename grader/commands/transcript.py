"""`workshop transcript FILE [FILE2] [--html OUT]`: the page of what a run sent, request by request.

One file, or two side by side on one scale (the same task done two ways). The page is written, its path
printed, and opened when there is a browser to open it in.
"""
from __future__ import annotations

import os
import sys
import webbrowser
from pathlib import Path

import click

from grader.errors import WorkshopError
from grader.transcripts.load import NotATranscript, load


@click.command("transcript")
@click.argument("files", nargs=-1, required=True, metavar="FILE [FILE2]")
@click.option("--html", "out", metavar="OUT", help="Where to write the page (default: beside the first file, as .html).")
@click.option("--no-open", is_flag=True, help="Only write the page; do not open a browser.")
def transcript_command(files: tuple[str, ...], out: str | None, no_open: bool) -> None:
    """Draw a transcript (`python -m rover --transcript FILE`) as a page: the context of every request."""
    if len(files) > 2:
        raise WorkshopError(f"workshop transcript takes one file, or two to compare, not {len(files)}")
    page = write_page([Path(file) for file in files], Path(out) if out else None)
    show(page, open_it=not no_open)


def write_page(files: list[Path], out: Path | None, labels: list[str] | None = None) -> Path:
    """Load, check and draw the files (named on the page by `labels`, or their file names); a bad one is a
    WorkshopError of one line (exit 2)."""
    try:
        runs = [load(file) for file in files]
    except NotATranscript as problem:
        raise WorkshopError(str(problem)) from None
    for run, label in zip(runs, labels or []):
        run.name = label
    if out is None:
        out = files[0].with_name("-vs-".join(file.stem for file in files) + ".html")
    if not out.resolve().parent.is_dir():
        raise WorkshopError(f"--html {out}: the folder {out.parent} does not exist; make it first, or write elsewhere")
    from grader.transcripts.page import render  # here: Jinja2 costs every other command its import time

    out.write_text(render(runs), encoding="utf-8", errors="replace")
    return out


def show(page: Path, open_it: bool = True) -> None:
    """Print the page's path; open it only where a person has a screen to see it on."""
    click.echo(f"page: {page}")
    screen = sys.platform == "darwin" or bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    if open_it and screen and sys.stdout.isatty():
        try:
            webbrowser.get().open(page.resolve().as_uri())
        except webbrowser.Error:
            pass  # no browser after all: the path above is enough
