"""Errors as JSON: a ``DocentError`` says what to do, so its message goes to the client with a
4xx (503 for a server Docent relies on that does not answer); anything else is a bug, logged
here with its traceback, and the client gets a JSON 500 that says so, never the traceback.

Under ``/v1`` (the OpenAI-compatible routes) the body also has OpenAI's ``error`` object, so
that an OpenAI client shows the message.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from rag_core.errors import (
    ChromaUnavailableError,
    ConfigError,
    DatabaseUnavailableError,
    DiskFullError,
    DocentError,
    IndexBusyError,
    IndexMismatchError,
    ModelError,
    NotFoundError,
    ProviderError,
)
from rag_core.storage import SessionBusyError

logger = logging.getLogger(__name__)

INTERNAL = "Internal error: the server log has the details. Nothing was stored half; try again."

# the first class an error is an instance of decides its status
STATUS: list[tuple[type[DocentError], int]] = [
    (NotFoundError, 404),
    (SessionBusyError, 409),
    (IndexMismatchError, 409),
    (DiskFullError, 507),
    (DatabaseUnavailableError, 503),
    (ChromaUnavailableError, 503),
    (IndexBusyError, 503),
    (ModelError, 503),
    (ProviderError, 502),
    (ConfigError, 400),
    (DocentError, 400),
]


def status_for(e: DocentError) -> int:
    return next(code for cls, code in STATUS if isinstance(e, cls))


class PayloadTooLarge(DocentError):
    """A request body over the limit (413)."""


def error_body(request: Request, status: int, detail: object) -> dict[str, object]:
    body: dict[str, object] = {"detail": detail}
    if request.url.path.startswith("/v1"):
        message = detail if isinstance(detail, str) else "The request is malformed: see `detail`."
        kind = "invalid_request_error" if status < 500 else "server_error"
        body["error"] = {"message": message, "type": kind, "code": status}
    return body


def install(app: FastAPI) -> None:
    """The handlers: DocentError, HTTPException and validation errors as JSON, the rest as a 500."""

    @app.exception_handler(PayloadTooLarge)
    async def too_large(request: Request, e: PayloadTooLarge) -> JSONResponse:
        return JSONResponse(error_body(request, 413, str(e)), status_code=413)

    @app.exception_handler(DocentError)
    async def docent(request: Request, e: DocentError) -> JSONResponse:
        status = status_for(e)
        return JSONResponse(error_body(request, status, str(e)), status_code=status)

    @app.exception_handler(HTTPException)
    async def http(request: Request, e: HTTPException) -> JSONResponse:
        return JSONResponse(error_body(request, e.status_code, e.detail), status_code=e.status_code, headers=e.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, e: RequestValidationError) -> JSONResponse:
        details = [{k: v for k, v in d.items() if k != "ctx" or isinstance(v, dict)} for d in e.errors()]
        return JSONResponse(error_body(request, 422, _plain(details)), status_code=422)

    @app.exception_handler(Exception)
    async def anything(request: Request, e: Exception) -> JSONResponse:
        logger.error("%s %s failed", request.method, request.url.path, exc_info=e)
        return JSONResponse(error_body(request, 500, INTERNAL), status_code=500)


def _plain(value: object) -> object:
    """Validation details as JSON (an error's ``ctx`` may hold the exception itself)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)
