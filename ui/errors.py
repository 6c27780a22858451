"""HTTP errors as one small family: each carries its status, and one handler renders them all."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse


class HttpError(Exception):
    """An error the API answers with its own status and a JSON body: {"error": {status, type, message}}."""

    status = 500
    error_type = "InternalError"

    def __init__(self, message: str, *, error_type: str | None = None, extra: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        if error_type is not None:
            self.error_type = error_type
        self.extra = extra or {}

    def body(self) -> dict[str, Any]:
        return {"error": {"status": self.status, "type": self.error_type, "message": self.message, **self.extra}}


class BadRequest(HttpError):
    status = 400
    error_type = "BadRequest"


class Unauthorized(HttpError):
    status = 401
    error_type = "Unauthorized"


class Forbidden(HttpError):
    status = 403
    error_type = "Forbidden"


class NotFound(HttpError):
    status = 404
    error_type = "NotFound"


class Conflict(HttpError):
    status = 409
    error_type = "Conflict"


class UnsupportedMediaType(HttpError):
    status = 415
    error_type = "UnsupportedMediaType"


class Unprocessable(HttpError):
    status = 422
    error_type = "Unprocessable"


class ServiceUnavailable(HttpError):
    status = 503
    error_type = "ServiceUnavailable"


async def render_validation_error(request: Request, exc: Exception) -> JSONResponse:
    """FastAPI's own checks (query and path parameters) answer in the same shape as every other error."""
    assert isinstance(exc, RequestValidationError)
    problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
    return await render_http_error(request, Unprocessable(problems))


async def render_http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HttpError)
    headers = {"WWW-Authenticate": "Bearer"} if isinstance(exc, Unauthorized) else None
    return JSONResponse(exc.body(), status_code=exc.status, headers=headers)


async def render_store_full(request: Request, exc: Exception) -> JSONResponse:
    """A write the read model's disk had no room for (a door's claim of a decision, a grant): 503
    with its one line, which names the store and says its disk is full; nothing was kept, and the
    same request goes through once there is room."""
    return await render_http_error(request, ServiceUnavailable(str(exc), error_type="StoreFull"))


async def render_store_unavailable(request: Request, exc: Exception) -> JSONResponse:
    """The database is out of reach (restarted, failed over, the network to it cut): 503 with its
    one line, which names the store and why, not a bare 500; the same request goes through once it
    is back."""
    return await render_http_error(request, ServiceUnavailable(str(exc), error_type="StoreUnavailable"))
