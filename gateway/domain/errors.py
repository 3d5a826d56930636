"""The gateway's one error tree, its one envelope and its one exception-to-answer mapper.

Every exception the gateway raises on purpose is a ``GatewayException``:

GatewayException
├── ConfigError             the configuration is invalid (gateway/config/errors.py): startup
│                           and CLI only, never an answer
├── TranslationError        a request the Anthropic translation cannot express; the adapter
│                           relays it as an upstream 400 ``invalid_request`` with ``param``
├── Unsupported             a /v1/responses parameter the translation to chat cannot express
│                           (gateway/responses/request.py): relayed as an upstream 400
│                           ``unsupported_parameter``
├── Untranslatable          a /v1/messages parameter the translation to chat cannot express
│                           (gateway/messages/request.py): relayed as an upstream 400
│                           ``unsupported_parameter``, in Anthropic's envelope
├── MigrationLockTimeout    another process held the migration lock past the wait
│                           (gateway/db/migrate_lock.py): startup and CLI only
├── UpstreamError           one upstream call failed, classified by ``kind`` (FailureKind);
│                           never answered as such: retried, fallen back from, then answered
│                           by ``exhausted`` (one of the 429/502/504 below)
├── UpstreamRejected        a non-retryable upstream answer (a 4xx other than 401/403/408/429):
│                           relayed with its own status and (redacted) body
├── Refused                 a budget line would be passed (gateway/budgets/store.py): the
│                           budget gate answers it as BudgetExceeded
├── SettleUncertain         a budget settlement may or may not have committed (budgets/store.py):
│                           the gate keeps it for recovery, never an answer
├── EventTooLarge           an SSE event past its cap (gateway/streaming/sse.py): the adapter
│   │                       raises UpstreamError(oversize), the relay ends the stream
│   └── FrameTooLarge       an AWS event-stream frame past it (gateway/upstream/bedrock/events.py)
├── BadFrame                an AWS event-stream frame botocore cannot decode (a CRC, a length):
│                           the Bedrock adapter raises UpstreamError(invalid_response)
├── UndecodableBody         an upstream error body in an encoding not undone
│                           (gateway/upstream/error_body.py): described, never raised further
├── EvalImportError         eval results that cannot be imported (gateway/signals/quality.py):
│                           the CLI prints each problem
├── SuiteError              an eval suite that cannot be run (gateway/evals/suite.py): the
│                           CLI prints each problem
└── GatewayError            an answer: HTTP status, OpenAI type and code
    ├── InvalidRequest          400 invalid_request_error  invalid_request
    │   └── InvalidJson         400 invalid_request_error  invalid_json
    ├── NoEligibleModel         400 / 503                   no_eligible_model
    ├── AuthenticationFailed    401 authentication_error    invalid_api_key
    ├── ConfigurationNotAllowed 403 permission_error        configuration_not_allowed
    ├── CrossSiteRequest        403 permission_error        cross_site_request
    ├── ModelNotFound           404 invalid_request_error   model_not_found
    ├── NotFound                404 invalid_request_error   not_found
    ├── MethodNotAllowed        405 invalid_request_error   method_not_allowed
    ├── Conflict                409 invalid_request_error   conflict (admin writes)
    │   ├── KeyFromFile         409 invalid_request_error   key_from_file
    │   ├── TeamFromFile        409 invalid_request_error   team_from_file
    │   ├── TeamHasKeys         409 invalid_request_error   team_has_keys
    │   └── AlreadyExists       409 invalid_request_error   already_exists
    ├── RequestHeadTimedOut     408 invalid_request_error   request_timeout
    ├── RequestTooLarge         413 invalid_request_error   request_too_large
    ├── UnsupportedMediaType    415 invalid_request_error   unsupported_media_type
    ├── HostNotAllowed          421 invalid_request_error   host_not_allowed
    ├── BudgetExceeded          429 rate_limit_error        budget_exceeded
    ├── RateLimited             429 rate_limit_error        rate_limited
    ├── RateLimitExceeded       429 rate_limit_error        rate_limit_exceeded
    ├── RequestHeadTooLarge     431 invalid_request_error   request_header_too_large
    ├── InternalError           500 api_error               internal_error
    ├── BudgetCheckFailed       500 api_error               internal_error
    ├── UpstreamFailed          502 api_error               upstream_error
    │   └── InvalidUpstreamResponse 502 api_error           invalid_upstream_response
    ├── UpstreamAuthFailed      502 api_error               upstream_auth_failed
    ├── BudgetUnavailable       503 api_error               budget_unavailable
    ├── BudgetBusy              503 api_error               budget_busy
    ├── RateLimitUnavailable    503 api_error               rate_limit_unavailable
    ├── SessionCheckFailed      503 api_error               session_check_failed
    ├── ServerBusy              503 api_error               server_busy
    └── UpstreamTimedOut        504 api_error               upstream_timeout

``envelope`` builds every OpenAI error envelope the gateway writes (answers and the error
events that end a stream); ``as_gateway_error`` is the one place an exception becomes the
``GatewayError`` a client is answered with.
"""

from __future__ import annotations

from typing import Any, ClassVar

from gateway.domain.failures import ERROR_CLASS, RETRYABLE_KINDS, ErrorClass, FailureKind

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


class BudgetExceeded(GatewayError):
    status = 429
    code = "budget_exceeded"
    error_class = ErrorClass.BUDGET_EXCEEDED

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
    error_class = ErrorClass.UPSTREAM_429

    def __init__(self, message: str, *, retry_after: str | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after

    def headers(self) -> dict[str, str]:
        return {"retry-after": self.retry_after} if self.retry_after else {}


class RateLimitExceeded(GatewayError):
    """A key, team or configuration rate limit (``rateLimit``) refused the call, or every
    model it could be sent to is at its own ``models[].rateLimit``."""

    status = 429
    code = "rate_limit_exceeded"
    error_class = ErrorClass.RATE_LIMIT_EXCEEDED

    def __init__(self, message: str, *, retry_after_seconds: int = 1) -> None:
        super().__init__(message)
        self.retry_after_seconds = retry_after_seconds

    def headers(self) -> dict[str, str]:
        return {"retry-after": str(self.retry_after_seconds)}


class RateLimitUnavailable(GatewayError):
    """Redis (``redis.url``) is away and ``rateLimits.onRedisOutage`` is ``refuse``."""

    status = 503
    code = "rate_limit_unavailable"
    error_class = ErrorClass.RATE_LIMIT_UNAVAILABLE

    def headers(self) -> dict[str, str]:
        return {"retry-after": "1"}


class InternalError(GatewayError):
    """A fault of the gateway's own (a bug): the answer says no more than that. It never
    counts against a provider: not retried, not fallen back from, no health or circuit
    change."""

    error_class = ErrorClass.INTERNAL_ERROR

    def __init__(self, message: str = UNEXPECTED_MESSAGE) -> None:
        super().__init__(message)


class BudgetCheckFailed(GatewayError):
    """The budget check hit a database error that is not an outage: the call is refused."""

    error_class = ErrorClass.BUDGET_ERROR


class BudgetUnavailable(GatewayError):
    """The budget database is down and ``budgets.onDatabaseOutage`` is ``refuse``."""

    status = 503
    code = "budget_unavailable"
    error_class = ErrorClass.BUDGET_UNAVAILABLE


class BudgetBusy(GatewayError):
    """The budget database stayed saturated past the check's wait: refused whatever
    ``budgets.onDatabaseOutage`` says, because a call admitted unchecked under load is how
    a burst overruns a budget."""

    status = 503
    code = "budget_busy"
    error_class = ErrorClass.BUDGET_BUSY

    def headers(self) -> dict[str, str]:
        return {"retry-after": "1"}


class SessionCheckFailed(GatewayError):
    """A console session's sign-out could not be read or written: the database is
    unreachable. Refused rather than trusted, since a signed-out cookie may be replayed;
    the admin key as a bearer needs no database."""

    status = 503
    code = "session_check_failed"

    def headers(self) -> dict[str, str]:
        return {"retry-after": "1"}


class UpstreamFailed(GatewayError):
    status = 502
    code = "upstream_error"


class InvalidUpstreamResponse(UpstreamFailed):
    """The last attempt's answer was unusable: larger than the gateway reads."""

    code = "invalid_upstream_response"
    error_class = ErrorClass.INVALID_UPSTREAM_RESPONSE


class UpstreamAuthFailed(GatewayError):
    """A provider refused the gateway's own credentials (its 401/403): the operator's
    configuration needs attention, not the caller's key or request."""

    status = 502
    code = "upstream_auth_failed"
    error_class = ErrorClass.UPSTREAM_AUTH


class ServerBusy(GatewayError):
    """Every connection slot of this process is taken; a retry soon may find one free."""

    status = 503
    code = "server_busy"

    def headers(self) -> dict[str, str]:
        return {"retry-after": "1"}


class UpstreamTimedOut(GatewayError):
    status = 504
    code = "upstream_timeout"
    error_class = ErrorClass.UPSTREAM_TIMEOUT


class TranslationError(GatewayException, ValueError):
    """The client's request cannot be expressed for Anthropic: answered with a 400."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param


class UpstreamError(GatewayException):
    """One upstream call failed; adapters raise it at their boundary (``raise ... from``)."""

    def __init__(
        self,
        kind: FailureKind,
        message: str,
        *,
        status: int | None = None,
        body: bytes = b"",
        content_type: str = "application/json",
        retry_after: str | None = None,
        retryable: bool | None = None,
    ) -> None:
        super().__init__(message)
        self._retryable = retryable
        self.kind = kind
        self.message = message
        self.status = status
        self.body = body
        self.content_type = content_type
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        """Another attempt (a retry or a fallback) may answer."""
        if self._retryable is not None:
            return self._retryable
        return self.kind in RETRYABLE_KINDS

    @property
    def error_class(self) -> ErrorClass:
        return ERROR_CLASS[self.kind]


class UpstreamRejected(GatewayException):
    """A non-retryable upstream answer (4xx other than 401/403/408/429): the client gets
    its status and its body as an envelope."""

    def __init__(self, error: UpstreamError) -> None:
        super().__init__(error.message)
        self.error = error


def exhausted(last: UpstreamError, listing: str, provider: str) -> GatewayError:
    """The answer when every attempt failed: by the last attempt's kind. ``listing`` names
    each attempt and its kind; ``provider`` is the last attempt's."""
    if last.kind is FailureKind.TIMEOUT:
        return UpstreamTimedOut(f"The upstream timed out ({listing}).")
    if last.kind is FailureKind.HTTP_429:
        return RateLimited(
            f"The upstream rate-limited the call ({listing}).", retry_after=last.retry_after
        )
    if last.kind is FailureKind.OVERSIZE:
        return InvalidUpstreamResponse(f"The upstream's answer was too large ({listing}).")
    if last.kind is FailureKind.AUTH_REJECTED:
        return UpstreamAuthFailed(
            f"The provider '{provider}' rejected the gateway's credentials; your API key is "
            f"fine, the gateway's key for that provider needs attention ({listing})."
        )
    return UpstreamFailed(f"Every attempt failed ({listing}).")


def as_gateway_error(exc: BaseException) -> GatewayError:
    """The one exception-to-answer mapper: what a client is answered with for ``exc``.

    An upstream rejection with a body is relayed as it is by the pipeline, not mapped here;
    one without (a bare status) becomes an ``upstream_error``. Anything unexpected is a 500
    whose message says nothing of the exception (its text may carry request data).
    """
    if isinstance(exc, GatewayError):
        return exc
    if isinstance(exc, TranslationError):
        return InvalidRequest(exc.message, param=exc.param)
    if isinstance(exc, UpstreamRejected):
        exc = exc.error
    if isinstance(exc, UpstreamError):
        return UpstreamFailed(f"The upstream failed ({exc.kind}).")
    return InternalError()
