"""Litestar's exception handlers: every error answers OpenAI's envelope, never a traceback.

The mapping itself is ``gateway.domain.errors.as_gateway_error`` (the one mapper, shared with
the proxied endpoints); Litestar's own HTTP exceptions become the error tree's classes here,
the one place that knows them.
"""

from __future__ import annotations

import logging
from typing import Any

from litestar import Request, Response
from litestar.exceptions import HTTPException

from gateway.domain.errors import (
    GatewayError,
    InternalError,
    InvalidRequest,
    MethodNotAllowed,
    NotFound,
    RequestTooLarge,
    as_gateway_error,
)

log = logging.getLogger(__name__)

# Litestar's statuses that have a class of their own in the error tree.
_BY_STATUS: dict[int, type[GatewayError]] = {
    404: NotFound,
    405: MethodNotAllowed,
    413: RequestTooLarge,
}


class _HttpRefusal(InvalidRequest):
    """Any other 4xx of the HTTP layer: its own status, code ``invalid_request``."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self._status = status

    @property
    def http_status(self) -> int:
        return self._status


def from_http_exception(exc: HTTPException) -> GatewayError:
    status = exc.status_code
    message = str(exc.detail)
    known = _BY_STATUS.get(status)
    if known is not None:
        return known(message)
    if status >= 500:
        return InternalError(message)
    return _HttpRefusal(message, status)


def _response(error: GatewayError) -> Response[dict[str, Any]]:
    return Response(error.envelope(), status_code=error.http_status, headers=error.headers())


def gateway_error(_: Request[Any, Any, Any], exc: GatewayError) -> Response[dict[str, Any]]:
    return _response(exc)


def http_error(_: Request[Any, Any, Any], exc: HTTPException) -> Response[dict[str, Any]]:
    return _response(from_http_exception(exc))


def unexpected_error(request: Request[Any, Any, Any], exc: Exception) -> Response[dict[str, Any]]:
    # The type only: messages of unexpected errors can carry request data.
    log.error("unhandled %s on %s", type(exc).__name__, request.url.path)
    return _response(as_gateway_error(exc))


EXCEPTION_HANDLERS: dict[Any, Any] = {
    GatewayError: gateway_error,
    HTTPException: http_error,
    Exception: unexpected_error,
}
