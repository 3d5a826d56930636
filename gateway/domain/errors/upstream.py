"""The upstream side of the tree: the answers when upstreams failed (502/504), the
exceptions one upstream call raises (``UpstreamError``, ``UpstreamRejected``,
``TranslationError``), and the mapping from them to the client's answer (``exhausted``,
``as_gateway_error``)."""

from __future__ import annotations

from gateway.domain.errors.base import GatewayError, GatewayException
from gateway.domain.errors.refusals import InternalError, RateLimited
from gateway.domain.errors.requests import InvalidRequest
from gateway.domain.failures import ERROR_CLASS, RETRYABLE_KINDS, ErrorClass, FailureKind


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
