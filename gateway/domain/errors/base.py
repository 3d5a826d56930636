"""The root of the error tree (``GatewayException``), the answer every error is
(``GatewayError``) and the one OpenAI error envelope the gateway writes."""

from __future__ import annotations

from typing import Any, ClassVar

from gateway.domain.failures import ErrorClass

UNEXPECTED_MESSAGE = "The gateway failed to handle the request."


def error_type_for(status: int) -> str:
    if status == 401:
        return "authentication_error"
    if status == 403:
        return "permission_error"
    if status == 429:
        return "rate_limit_error"
    if status >= 500:
        return "api_error"
    return "invalid_request_error"


def envelope(
    status: int | None, message: str, code: str | None, param: str | None = None
) -> dict[str, Any]:
    """OpenAI's error envelope. ``status`` None: the error event that ends a stream, which
    has no status of its own (type ``api_error``)."""
    kind = error_type_for(status) if status is not None else "api_error"
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


class GatewayException(Exception):
    """The root of every exception the gateway raises on purpose (the tree above)."""


class GatewayError(GatewayException):
    status: ClassVar[int] = 500
    code: ClassVar[str] = "internal_error"
    error_class: ClassVar[ErrorClass | None] = None  # the telemetry row's error_class

    def __init__(self, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param

    @property
    def http_status(self) -> int:
        return self.status

    def headers(self) -> dict[str, str]:
        return {}

    def envelope(self) -> dict[str, Any]:
        return envelope(self.http_status, self.message, self.code, self.param)
