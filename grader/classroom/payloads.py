"""What students may send the board, as pydantic models: every field bounded, unknown fields refused."""
from __future__ import annotations

import unicodedata
from typing import Annotated, Literal

import anyio

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

MAX_BODY = 64 * 1024  # a report of every check of every lesson is about 5 KB
MAX_CHECKS = 200
BODY_TIMEOUT = 10.0  # seconds for a whole request body to arrive (8 MB at under 1 MB/s is a broken link anyway)
CheckId = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]*$")]
Lesson = Annotated[int, Field(ge=0, le=99)]
Seconds = Annotated[float, Field(ge=0, le=3600)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


NAME_MOST = 40  # characters of a seat's name


class Join(_Strict):
    name: str = Field(min_length=1, max_length=4 * NAME_MOST)  # the room to say "too long" in our own words
    workspace: str | None = Field(None, pattern=r"^[0-9a-f]{32}$", description="the joining workspace's own id: a rejoin takes its seat back")

    @field_validator("name")
    @classmethod
    def _printable(cls, name: str) -> str:
        name = normal_name(name)
        if not name or not name.isprintable():
            raise ValueError("a name is 1 to 40 printable characters, e.g. --name 'Ada L.'")
        if len(name) > NAME_MOST:
            raise ValueError(f"a name is at most {NAME_MOST} characters and this one has {len(name)}: "
                             f"shorten it, e.g. --name 'Ada L.'")
        return name


def normal_name(name: str) -> str:
    """A name as it is seated: NFKC (full-width letters and odd spaces as their plain forms), runs of spaces as one,
    none at the ends. Control characters (a tab) stay, for the check that refuses them. Look-alikes across
    scripts (a Cyrillic "А" for a Latin "A") stay apart: telling those apart is the instructor's call."""
    return " ".join(part for part in unicodedata.normalize("NFKC", name).strip().split(" ") if part)


class SeatName(_Strict):
    name: str = Field(min_length=1, max_length=40)


class CheckResult(_Strict):
    id: CheckId
    lesson: Lesson
    status: Literal["passed", "failed", "error", "timeout"]
    seconds: Seconds | None = None


class Report(_Strict):
    id: str = Field(pattern=r"^[0-9a-f]{32}$", description="made by the sender, so a post sent twice is stored once")
    lesson: Lesson
    passed: bool
    score: int = Field(ge=0, le=10_000)
    max_score: int = Field(ge=0, le=10_000)
    seconds: Seconds | None = None
    checks: list[CheckResult] = Field(max_length=MAX_CHECKS)


class TooLarge(ValueError):
    pass


class TooSlow(ValueError):
    pass


async def read_body(request, limit: int, seconds: float | None = None) -> bytes:
    """The request body, refused (TooLarge) as soon as it passes `limit` bytes, declared or not, and (TooSlow) when
    it has not all arrived within `seconds`: a client that trickles its body does not hold a connection for long."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise TooLarge(f"the body is {int(declared):,} bytes; at most {limit:,} are accepted")
    body = bytearray()
    seconds = BODY_TIMEOUT if seconds is None else seconds
    with anyio.move_on_after(seconds) as timer:
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                raise TooLarge(f"the body is over {limit:,} bytes, the most accepted")
    if timer.cancelled_caught:
        raise TooSlow(f"the body did not arrive within {seconds:g} s")
    return bytes(body)


def reason(problem: ValidationError) -> str:
    """The first thing wrong with a payload, in one line: where it is and what was expected."""
    error = problem.errors(include_url=False)[0]
    where = ".".join(str(part) for part in error["loc"]) or "body"
    if error["type"] == "extra_forbidden":
        return f"unknown field {where!r}: a payload has only the fields the kit sends"
    return f"{where}: {error['msg'].removeprefix('Value error, ')}"  # our own validators' words, without pydantic's label
