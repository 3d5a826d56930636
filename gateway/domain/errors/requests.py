"""The answers to a request the gateway refuses for what it is: malformed, unauthorized,
unknown, of the wrong method, too large, from the wrong host or site (4xx)."""

from __future__ import annotations

from gateway.domain.errors.base import GatewayError
from gateway.domain.failures import ErrorClass


class InvalidRequest(GatewayError):
    status = 400
    code = "invalid_request"


class InvalidJson(InvalidRequest):
    code = "invalid_json"


class NoEligibleModel(GatewayError):
    status = 503
    code = "no_eligible_model"
    error_class = ErrorClass.NO_ELIGIBLE_MODEL

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
    """No such path."""

    status = 404
    code = "not_found"


class Conflict(GatewayError):
    """An admin write that the state of keys and teams forbids."""

    status = 409
    code = "conflict"


class KeyFromFile(Conflict):
    code = "key_from_file"


class TeamFromFile(Conflict):
    code = "team_from_file"


class TeamHasKeys(Conflict):
    code = "team_has_keys"


class AlreadyExists(Conflict):
    code = "already_exists"


class MethodNotAllowed(GatewayError):
    """A method the path does not take, on every path (the proxied ones included)."""

    status = 405
    code = "method_not_allowed"


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
