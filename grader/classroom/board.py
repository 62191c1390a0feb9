"""The class board: a FastAPI app over the store. Students post with the class code; only the instructor reads.

Routes: `/` (the page; `?token=` the instructor's), `/api/board` (the live fragment the page polls),
`/board.csv`, `POST /api/join`, `POST /api/report`, and `POST /v1/messages` when the relay is on.
Every refusal is a 4xx with one reason in `{"error": ...}` and leaves the store as it was.
"""
from __future__ import annotations

from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import ValidationError

from grader.classroom import view
from grader.classroom.payloads import MAX_BODY, Join, Report, TooLarge, read_body, reason
from grader.classroom.relay import Relay, error
from grader.classroom.store import ClassFull, NameTaken, Store, Student

STATIC = Path(__file__).parent / "static"
PAGE_HEADERS = {"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'",
                "Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY",
                "Cache-Control": "no-store"}


class Refused(Exception):
    def __init__(self, status: int, reason: str):
        self.status, self.reason = status, reason


def create_app(store: Store, relay: Relay | None = None) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI):
        yield
        if relay is not None:
            await relay.close()

    app = FastAPI(title="workshop class board", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.store, app.state.relay = store, relay
    budget = relay.budget if relay else None

    @app.exception_handler(Refused)
    async def refused(request: Request, problem: Refused) -> JSONResponse:
        return JSONResponse({"error": problem.reason}, status_code=problem.status)

    @app.get("/", response_class=HTMLResponse)
    def page(request: Request) -> Response:
        if not _is_instructor(request, store):
            return HTMLResponse("<!doctype html><title>Class board</title><p>This board needs the instructor's link: open the URL "
                                "<code>workshop class serve</code> printed (it ends in <code>?token=...</code>).</p>", 401, headers=PAGE_HEADERS)
        return HTMLResponse((STATIC / "board.html").read_text(encoding="utf-8"), headers=PAGE_HEADERS)

    @app.get("/board.js")
    def script() -> Response:
        return Response((STATIC / "board.js").read_bytes(), media_type="text/javascript", headers=PAGE_HEADERS)

    @app.get("/board.css")
    def style() -> Response:
        return Response((STATIC / "board.css").read_bytes(), media_type="text/css", headers=PAGE_HEADERS)

    @app.get("/api/board", response_class=HTMLResponse)
    def live(request: Request) -> Response:
        _instructor_only(request, store)
        return HTMLResponse(view.fragment(store.students(), budget=budget), headers=PAGE_HEADERS)

    @app.get("/board.csv")
    def export(request: Request) -> Response:
        _instructor_only(request, store)
        return Response(view.csv_text(store.students()), media_type="text/csv; charset=utf-8",
                        headers={**PAGE_HEADERS, "Content-Disposition": 'attachment; filename="class.csv"'})

    @app.post("/api/join", status_code=201)
    async def join(request: Request) -> dict:
        _class_only(request, store)
        wanted = await _payload(request, Join)
        try:
            student, token = store.join(wanted.name, _bearer(request) or None)
        except NameTaken:
            raise Refused(409, f"the name {wanted.name!r} is taken on this board; join with another --name") from None
        except ClassFull:
            raise Refused(403, "this class is full; ask the instructor") from None
        return {"name": student.name, "token": token, "relay": relay is not None}

    @app.post("/api/report", status_code=201)
    async def report(request: Request) -> Response:
        _class_only(request, store)
        student = _student(request, store)
        sent = await _payload(request, Report)
        stored = store.record(student, sent)
        return JSONResponse({"stored": stored}, status_code=201 if stored else 200)

    @app.post("/v1/messages")
    async def messages(request: Request) -> Response:
        if relay is None:
            return error(404, "not_found_error", "this class board runs without a relay; the instructor starts one with "
                                                 "`workshop class serve --relay`, or use your own ANTHROPIC_API_KEY")
        return await relay.messages(request)

    return app


def _bearer(request: Request) -> str:
    header = request.headers.get("authorization", "")
    return header[7:].strip() if header[:7].lower() == "bearer " else ""


def _is_instructor(request: Request, store: Store) -> bool:
    token = request.query_params.get("token") or _bearer(request)
    return bool(token) and store.is_instructor(token)


def _instructor_only(request: Request, store: Store) -> None:
    if not _is_instructor(request, store):
        raise Refused(401, "only the instructor reads the board: add the ?token=... that `workshop class serve` printed")


def _class_only(request: Request, store: Store) -> None:
    code = request.headers.get("x-class-code", "")
    if not code:
        raise Refused(401, "no X-Class-Code header: run `workshop join URL CODE --name NAME` with the code the instructor gave")
    if not store.is_code(code):
        raise Refused(403, "X-Class-Code is not this class's code: check the code the instructor gave")


def _student(request: Request, store: Store) -> Student:
    token = _bearer(request)
    student = store.student_by_token(token) if token else None
    if student is None:
        raise Refused(401, "no known student token (Authorization: Bearer ...): run `workshop join URL CODE --name NAME` again")
    return student


async def _payload(request: Request, model: type[Join] | type[Report]):
    try:
        return model.model_validate_json(await read_body(request, MAX_BODY))
    except TooLarge as problem:
        raise Refused(413, str(problem)) from None
    except ValidationError as problem:
        raise Refused(422, reason(problem)) from None
