"""Every refusal the board and the relay give, in the Messages API's own error shape.

`{"type": "error", "error": {"type": ..., "message": ...}}`: the SDKs, Claude Code and `workshop join`
all read the message from it, whichever route refused.
"""
from __future__ import annotations

from fastapi.responses import JSONResponse

KINDS = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error", 404: "not_found_error",
         405: "invalid_request_error", 408: "timeout_error", 409: "invalid_request_error", 413: "request_too_large",
         422: "invalid_request_error", 429: "rate_limit_error", 502: "api_error", 503: "api_error", 504: "timeout_error"}


class Refused(Exception):
    """Raised anywhere in a route: answered as `error(status, ...)`."""

    def __init__(self, status: int, reason: str, kind: str | None = None, headers: dict | None = None):
        super().__init__(reason)
        self.status, self.reason, self.kind, self.headers = status, reason, kind, headers or {}


def error(status: int, message: str, kind: str | None = None, retry: bool = False, headers: dict | None = None) -> JSONResponse:
    """An error in the Messages API's shape, saying whether the SDK's retries could help (`x-should-retry`)."""
    return JSONResponse({"type": "error", "error": {"type": kind or KINDS.get(status, "api_error"), "message": message}},
                        status_code=status, headers={"x-should-retry": "true" if retry else "false", **(headers or {})})

