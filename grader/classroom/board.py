"""The class board: a FastAPI app over the store. Students post with the class code; only the instructor reads.

Routes: `/` (the page with the instructor's `?token=`; without one, a short note, so HEAD and GET from any client
answer 200), `/api/board` (the live fragment the page polls), `/board.csv`, `POST /api/join`, `POST /api/report`,
`POST /api/seats/approve|remove` (the instructor's buttons), and with the relay on `/v1/messages`,
`/v1/messages/count_tokens`, `/v1/models[/{id}]`. Every refusal is in the Messages API's error shape and leaves
the store as it was; a database that cannot be written is a 503 naming why.
"""
from __future__ import annotations

from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import ValidationError
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect

from grader.classroom import view
from grader.classroom.payloads import MAX_BODY, Join, Report, SeatName, TooLarge, TooSlow, read_body, reason
from grader.classroom.refusals import Refused, error
from grader.classroom.relay import Relay, not_relaying
from grader.classroom.seats import Seats
from grader.classroom.store import ClassFull, Store, Student, Unavailable

STATIC = Path(__file__).parent / "static"
PAGE_HEADERS = {"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'",
                "Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY",
                "Cache-Control": "no-store"}
NOTE = ("<!doctype html><title>Class board</title><p>This is a <code>workshop</code> class board{relay}. The instructor opens it with "
        "the URL <code>workshop class serve</code> printed (it ends in <code>?token=...</code>); students join with "
        "<code>workshop join</code>.</p>")


def create_app(store: Store, relay: Relay | None = None, seats: Seats | None = None) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI):
        yield
        if relay is not None:
            await relay.close()

    app = FastAPI(title="workshop class board", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    seats = seats or Seats(store)
    app.state.store, app.state.relay, app.state.seats = store, relay, seats
    budget = relay.budget if relay else None
    _answer_refusals_in_the_api_shape(app)

    @app.api_route("/", methods=["GET", "HEAD"], response_class=HTMLResponse)
    def page(request: Request) -> Response:
        if "token" not in request.query_params and not _bearer(request):
            return HTMLResponse(NOTE.format(relay=" with an API relay" if relay else ""), headers=PAGE_HEADERS)
        if not _is_instructor(request, store):
            return HTMLResponse("<!doctype html><title>Class board</title><p>This link's token is not this board's: open the URL "
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
    async def join(request: Request) -> JSONResponse:
        _class_only(request, store)
        wanted = await _payload(request, Join)
        student, token = seats.join(wanted, _bearer(request) or None, request.client.host if request.client else "")
        return JSONResponse({"name": student.name, "token": token, "relay": relay is not None, "pending": student.pending},
                            status_code=202 if student.pending else 201)

    @app.post("/api/seats/{action}")
    async def seat(request: Request, action: str) -> dict:
        _instructor_only(request, store)
        name = (await _payload(request, SeatName)).name
        done = {"approve": store.approve, "remove": store.remove}.get(action)
        if done is None:
            raise Refused(404, f"no seat action {action!r}: approve or remove")
        try:
            found = done(name)
        except ClassFull as full:
            raise Refused(409, f"{full}: remove a seat before approving {name!r}") from None
        if not found:
            raise Refused(404, f"no {'pending ' if action == 'approve' else ''}seat named {name!r}")
        seats.tell(f"{name} {'approved' if action == 'approve' else 'removed'}")
        return {"name": name, "done": action}

    @app.post("/api/report", status_code=201)
    async def report(request: Request) -> Response:
        _class_only(request, store)
        student = _student(request, store)
        sent = await _payload(request, Report)
        stored = store.record(student, sent)
        return JSONResponse({"stored": stored}, status_code=201 if stored else 200)

    @app.post("/v1/messages")
    async def messages(request: Request) -> Response:
        return await relay.messages(request) if relay else not_relaying()

    @app.post("/v1/messages/count_tokens")
    async def count_tokens(request: Request) -> Response:
        return await relay.free(request, "/v1/messages/count_tokens") if relay else not_relaying()

    @app.get("/v1/models")
    async def models(request: Request) -> Response:
        return await relay.free(request, "/v1/models") if relay else not_relaying()

    @app.get("/v1/models/{model_id}")
    async def model(request: Request, model_id: str) -> Response:
        return await relay.free(request, f"/v1/models/{model_id}") if relay else not_relaying()

    return app


def _answer_refusals_in_the_api_shape(app: FastAPI) -> None:
    @app.exception_handler(Refused)
    async def refused(request: Request, problem: Refused) -> Response:
        return error(problem.status, problem.reason, problem.kind, headers=problem.headers)

    @app.exception_handler(HTTPException)
    async def http_problem(request: Request, problem: HTTPException) -> Response:
        if problem.status_code == 404:
            return error(404, f"nothing at {request.method} {request.url.path} on this class board")
        if problem.status_code == 405:
            return error(405, f"{request.method} is not allowed at {request.url.path}", headers=problem.headers)
        return error(problem.status_code, str(problem.detail))

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, problem: RequestValidationError) -> Response:
        return error(400, f"this request is not one the board understands: {request.method} {request.url.path}")

    @app.exception_handler(Unavailable)
    async def unavailable(request: Request, problem: Unavailable) -> Response:
        return error(503, f"{problem}; the instructor should free some disk space", retry=False)

    @app.exception_handler(ClientDisconnect)
    async def gone(request: Request, problem: ClientDisconnect) -> Response:
        return Response(status_code=400)  # no one is left to read it; and nothing to log


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
    if student.pending:
        raise Refused(403, "your seat is waiting for the instructor's approval on the board")
    return student


async def _payload(request: Request, model: type):
    try:
        return model.model_validate_json(await read_body(request, MAX_BODY))
    except TooLarge as problem:
        raise Refused(413, str(problem)) from None
    except TooSlow as problem:
        raise Refused(408, str(problem)) from None
    except ValidationError as problem:
        raise Refused(422, reason(problem)) from None
