"""`workshop join URL CODE --name NAME` and `workshop leave`: opt this workspace in to (or out of) a class board."""
from __future__ import annotations

import click

from grader.classroom.report import forget, joined, remember, workspace_id
from grader.classroom.safe_text import for_terminal
from grader.commands.screen import say
from grader.course.workspace import here
from grader.errors import WorkshopError


@click.command("join")
@click.argument("url")
@click.argument("code")
@click.option("--name", required=True, help="Your name as the instructor will see it on the board.")
def join_command(url: str, code: str, name: str) -> None:
    """Join a class board: each `workshop check` then reports to it, and Rover can use the class relay."""
    workspace = here()
    if not (workspace.path / ".git").is_dir():
        raise WorkshopError(f"{workspace.path} has no .git folder to keep the class in; run `git init` there, then join again")
    url = url.rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise WorkshopError(f"{url} is not a board address; give the http://HOST:PORT the instructor showed")
    before = joined(workspace.path)
    again = before and before["url"] == url
    answer = _ask(url, code, {"name": name, "workspace": workspace_id(workspace.path)}, before["token"] if again else None)
    remember(workspace.path, {"url": url, "code": code, "name": answer["name"], "token": answer["token"], "relay": bool(answer.get("relay"))})
    shown = for_terminal(answer["name"])
    if answer.get("pending"):
        say(f"Asked to join the class at {url} as {shown}: the instructor approves it on the board. Until then your "
            "checks are not shown there; nothing to run again once approved.")
    else:
        say(f"Joined the class at {url} as {shown}: each `workshop check` now reports to the board "
            "(in the background; grading never waits for it). `workshop leave` stops it.")
    if answer.get("relay"):  # the export line is a command: on a line of its own, never wrapped
        say("This class has a relay: `python -m rover` uses it when ANTHROPIC_API_KEY is not set. For other tools:")
        click.echo(f"  export ANTHROPIC_BASE_URL={url} ANTHROPIC_API_KEY={answer['token']}")


@click.command("leave")
def leave_command() -> None:
    """Stop reporting this workspace's checks to the class board."""
    workspace = here()
    if forget(workspace.path):
        say("Left the class: `workshop check` no longer reports, and Rover no longer uses the class relay.")
    else:
        click.echo("This workspace has not joined a class; nothing to leave.")


def _ask(url: str, code: str, wanted: dict, token: str | None) -> dict:
    import httpx

    headers = {"X-Class-Code": code, **({"Authorization": f"Bearer {token}"} if token else {})}
    try:
        answer = httpx.post(f"{url}/api/join", json=wanted, headers=headers, timeout=5)
    except httpx.HTTPError as problem:
        raise WorkshopError(f"could not reach the class board at {url} ({type(problem).__name__}); "
                            "check the address the instructor gave and that you are on their network") from None
    try:
        data = answer.json()
    except ValueError:
        data = {}
    if answer.status_code not in (200, 201, 202) or not isinstance(data, dict) or not isinstance(data.get("token"), str):
        reason = message_of(data) or f"it answered {answer.status_code}"
        raise WorkshopError(f"the board at {url} did not let you join: {for_terminal(reason)}")
    return data


def message_of(answer: object) -> str | None:
    """The message in the board's error body (the Messages API's shape, or an older board's `{"error": "..."}`)."""
    problem = answer.get("error") if isinstance(answer, dict) else None
    if isinstance(problem, dict):
        problem = problem.get("message")
    return problem if isinstance(problem, str) and problem else None
