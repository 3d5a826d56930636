"""The gateway's error tree. Each error knows its HTTP status, OpenAI type and code.

GatewayError
├── InvalidRequest          400 invalid_request_error  (invalid_json, invalid_request)
├── NoEligibleModel         400 / 503                   no_eligible_model
├── AuthenticationFailed    401 authentication_error    invalid_api_key
├── ConfigurationNotAllowed 403 permission_error        configuration_not_allowed
├── CrossSiteRequest        403 permission_error        cross_site_request
├── ModelNotFound           404 invalid_request_error   model_not_found
├── RequestHeadTimedOut     408 invalid_request_error   request_timeout
├── RequestTooLarge         413 invalid_request_error   request_too_large
├── UnsupportedMediaType    415 invalid_request_error   unsupported_media_type
├── HostNotAllowed          421 invalid_request_error   host_not_allowed
├── BudgetExceeded          429 rate_limit_error        budget_exceeded
├── RateLimited             429 rate_limit_error        rate_limited
├── RequestHeadTooLarge     431 invalid_request_error   request_header_too_large
├── BudgetCheckFailed       500 api_error               internal_error
├── UpstreamFailed          502 api_error               upstream_error
│   └── InvalidUpstreamResponse 502 api_error           invalid_upstream_response
├── UpstreamAuthFailed      502 api_error               upstream_auth_failed
├── BudgetUnavailable       503 api_error               budget_unavailable
├── ServerBusy              503 api_error               server_busy
└── UpstreamTimedOut        504 api_error               upstream_timeout
"""

from __future__ import annotations

from typing import Any, ClassVar


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


class GatewayError(Exception):
    status: ClassVar[int] = 500
    code: ClassVar[str] = "internal_error"
    error_class: ClassVar[str | None] = None  # the telemetry row's error_class

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
        return {
            "error": {
                "message": self.message,
                "type": error_type_for(self.http_status),
                "param": self.param,
                "code": self.code,
            }
        }


class InvalidRequest(GatewayError):
    status = 400
    code = "invalid_request"


class InvalidJson(InvalidRequest):
    code = "invalid_json"


class NoEligibleModel(GatewayError):
    status = 503
    code = "no_eligible_model"
    error_class = "no_eligible_model"

    def __init__(self, message: str, *, caller_fault: bool) -> None:
        super().__init__(message)
        self.caller_fault = caller_fault

    @property
    def http_status(self) -> int:
        return 400 if self.caller_fault else 503


class AuthenticationFailed(GatewayError):
    status = 401
    code = "invalid_api_key"


class ConfigurationNotAllowed(GatewayError):
    status = 403
    code = "configuration_not_allowed"


class ModelNotFound(GatewayError):
    status = 404
    code = "model_not_found"


class NotFound(GatewayError):
    """An admin resource that does not exist (a console call id)."""

    status = 404
    code = "not_found"


class RequestTooLarge(GatewayError):
    status = 413
    code = "request_too_large"

    def headers(self) -> dict[str, str]:
        # The rest of the body is not read, so the connection cannot carry another request.
        return {"connection": "close"}


class RequestHeadTooLarge(GatewayError):
    status = 431
    code = "request_header_too_large"


class RequestHeadTimedOut(GatewayError):
    status = 408
    code = "request_timeout"


class UnsupportedMediaType(GatewayError):
    status = 415
    code = "unsupported_media_type"


class HostNotAllowed(GatewayError):
    status = 421
    code = "host_not_allowed"


class CrossSiteRequest(GatewayError):
    status = 403
    code = "cross_site_request"


class BudgetExceeded(GatewayError):
    status = 429
    code = "budget_exceeded"
    error_class = "budget_exceeded"

    def __init__(self, message: str, *, retry_after_seconds: int | None = None) -> None:
        super().__init__(message)
        self.retry_after_seconds = retry_after_seconds

    def headers(self) -> dict[str, str]:
        if self.retry_after_seconds is None:
            return {}
        return {"retry-after": str(self.retry_after_seconds)}


class RateLimited(GatewayError):
    status = 429
    code = "rate_limited"
    error_class = "upstream_429"

    def __init__(self, message: str, *, retry_after: str | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after

    def headers(self) -> dict[str, str]:
        return {"retry-after": self.retry_after} if self.retry_after else {}


class BudgetCheckFailed(GatewayError):
    """The budget check hit a database error that is not an outage: the call is refused."""

    error_class = "budget_error"


class BudgetUnavailable(GatewayError):
    """The budget database is down and ``budgets.onDatabaseOutage`` is ``refuse``."""

    status = 503
    code = "budget_unavailable"
    error_class = "budget_unavailable"


class UpstreamFailed(GatewayError):
    status = 502
    code = "upstream_error"


class InvalidUpstreamResponse(UpstreamFailed):
    """The last attempt's answer was unusable: larger than the gateway reads."""

    code = "invalid_upstream_response"
    error_class = "invalid_upstream_response"


class UpstreamAuthFailed(GatewayError):
    """A provider refused the gateway's own credentials (its 401/403): the operator's
    configuration needs attention, not the caller's key or request."""

    status = 502
    code = "upstream_auth_failed"
    error_class = "upstream_auth"


class ServerBusy(GatewayError):
    """Every connection slot of this process is taken; a retry soon may find one free."""

    status = 503
    code = "server_busy"

    def headers(self) -> dict[str, str]:
        return {"retry-after": "1"}


class UpstreamTimedOut(GatewayError):
    status = 504
    code = "upstream_timeout"
    error_class = "upstream_timeout"
