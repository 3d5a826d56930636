"""One exception-to-response mapper: every error answers OpenAI's envelope, never a traceback."""

from __future__ import annotations

import logging
from typing import Any

from litestar import Request, Response
from litestar.exceptions import HTTPException

from gateway.domain.errors import GatewayError, error_type_for

log = logging.getLogger(__name__)

_CODES = {404: "not_found", 405: "method_not_allowed", 413: "request_too_large"}


def _envelope(status: int, message: str, code: str) -> dict[str, Any]:
    return {
        "error": {"message": message, "type": error_type_for(status), "param": None, "code": code}
    }


def gateway_error(_: Request[Any, Any, Any], exc: GatewayError) -> Response[dict[str, Any]]:
    return Response(exc.envelope(), status_code=exc.http_status, headers=exc.headers())


def http_error(_: Request[Any, Any, Any], exc: HTTPException) -> Response[dict[str, Any]]:
    status = exc.status_code
    code = _CODES.get(status, "invalid_request" if status < 500 else "internal_error")
    return Response(_envelope(status, str(exc.detail), code), status_code=status)


def unexpected_error(request: Request[Any, Any, Any], exc: Exception) -> Response[dict[str, Any]]:
    # The type only: messages of unexpected errors can carry request data.
    log.error("unhandled %s on %s", type(exc).__name__, request.url.path)
    return Response(
        _envelope(500, "The gateway failed to handle the request.", "internal_error"),
        status_code=500,
    )


EXCEPTION_HANDLERS: dict[Any, Any] = {
    GatewayError: gateway_error,
    HTTPException: http_error,
    Exception: unexpected_error,
}
