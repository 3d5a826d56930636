"""The closed sets that name what went wrong: upstream failure kinds and error classes.

``FailureKind`` is what an adapter reports about one upstream call (``UpstreamError.kind``);
``ErrorClass`` is the telemetry row's ``error_class`` (docs/telemetry.md, "error_class
values"), what the call as a whole ended with. Both are ``StrEnum``: a member is its value,
so it is written to the database and the logs as the plain string.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal


class FailureKind(StrEnum):
    TIMEOUT = "timeout"  # connecting, or waiting for bytes
    CONNECT = "connect"  # refused, reset, or another transport fault
    HTTP_5XX = "http_5xx"
    HTTP_429 = "http_429"
    HTTP_408 = "http_408"
    HTTP_4XX = "http_4xx"  # the upstream refused the request itself: relayed, not retried
    AUTH_REJECTED = "auth_rejected"  # 401/403: the gateway's credentials
    INVALID_RESPONSE = "invalid_response"  # an unusable 2xx, or a redirect
    OVERSIZE = "oversize"  # an answer or a stream event past its size cap
    STREAM_CUT = "stream_cut"  # a stream that broke or closed early
    CIRCUIT_OPEN = "circuit_open"  # not attempted: the provider's circuit is open
    # Not sent: the gateway's own translation for this provider cannot express the request
    # (a 400 naming the parameter). Never the provider's fault: no health, no circuit.
    UNTRANSLATABLE = "untranslatable"


class ErrorClass(StrEnum):
    UPSTREAM_TIMEOUT = "upstream_timeout"
    UPSTREAM_CONNECT = "upstream_connect"
    UPSTREAM_5XX = "upstream_5xx"
    UPSTREAM_429 = "upstream_429"
    UPSTREAM_4XX = "upstream_4xx"
    UPSTREAM_AUTH = "upstream_auth"
    INVALID_UPSTREAM_RESPONSE = "invalid_upstream_response"
    STREAM_CUT = "stream_cut"
    CIRCUIT_OPEN = "circuit_open"
    CLIENT_DISCONNECTED = "client_disconnected"
    BUDGET_EXCEEDED = "budget_exceeded"
    BUDGET_UNAVAILABLE = "budget_unavailable"
    BUDGET_BUSY = "budget_busy"
    BUDGET_ERROR = "budget_error"
    RATE_LIMIT_EXCEEDED = "rate_limit_exceeded"  # a rateLimit refused it (gateway.limits)
    RATE_LIMIT_UNAVAILABLE = "rate_limit_unavailable"  # Redis away, onRedisOutage: refuse
    NO_ELIGIBLE_MODEL = "no_eligible_model"
    INVALID_REQUEST = "invalid_request"  # refused at ingress: a body of the wrong shape
    UNTRANSLATABLE = "untranslatable"  # refused by the translation to the provider's API
    INTERNAL_ERROR = "internal_error"  # a fault of the gateway's own, never the provider's


# Why a configuration resolved to nothing that can be attempted.
ResolutionFailure = Literal[
    ErrorClass.NO_ELIGIBLE_MODEL, ErrorClass.CIRCUIT_OPEN, ErrorClass.RATE_LIMIT_EXCEEDED
]

# A retryable kind means another attempt may answer: a retry or a fallback. An unusable 2xx
# answer (invalid JSON, no message, too large) or a redirect is the provider's fault, like
# a 5xx.
RETRYABLE_KINDS = frozenset(
    {
        FailureKind.TIMEOUT,
        FailureKind.CONNECT,
        FailureKind.HTTP_5XX,
        FailureKind.HTTP_429,
        FailureKind.HTTP_408,
        FailureKind.INVALID_RESPONSE,
        FailureKind.AUTH_REJECTED,
        FailureKind.OVERSIZE,
    }
)

# Failures another try on the same provider cannot mend: only the fallbacks may answer.
# A provider refusing the gateway's own credentials refuses them again a moment later;
# an answer too large to read would come back just as large.
SAME_PROVIDER_FUTILE = frozenset(
    {FailureKind.CIRCUIT_OPEN, FailureKind.AUTH_REJECTED, FailureKind.OVERSIZE}
)

# The row's error_class for each kind.
ERROR_CLASS: dict[FailureKind, ErrorClass] = {
    FailureKind.TIMEOUT: ErrorClass.UPSTREAM_TIMEOUT,
    FailureKind.CONNECT: ErrorClass.UPSTREAM_CONNECT,
    FailureKind.HTTP_5XX: ErrorClass.UPSTREAM_5XX,
    FailureKind.HTTP_429: ErrorClass.UPSTREAM_429,
    FailureKind.HTTP_408: ErrorClass.UPSTREAM_5XX,
    FailureKind.HTTP_4XX: ErrorClass.UPSTREAM_4XX,
    FailureKind.AUTH_REJECTED: ErrorClass.UPSTREAM_AUTH,
    FailureKind.INVALID_RESPONSE: ErrorClass.INVALID_UPSTREAM_RESPONSE,
    FailureKind.OVERSIZE: ErrorClass.INVALID_UPSTREAM_RESPONSE,
    FailureKind.STREAM_CUT: ErrorClass.STREAM_CUT,
    FailureKind.CIRCUIT_OPEN: ErrorClass.CIRCUIT_OPEN,
    FailureKind.UNTRANSLATABLE: ErrorClass.UNTRANSLATABLE,
}


def kind_for_status(status: int) -> FailureKind:
    """The kind of a non-2xx upstream answer."""
    if status in (401, 403):  # the gateway's credentials, not the caller's request
        return FailureKind.AUTH_REJECTED
    if status < 400:  # a redirect: never followed, so the answer is unusable
        return FailureKind.INVALID_RESPONSE
    if status == 408:
        return FailureKind.HTTP_408
    if status == 429:
        return FailureKind.HTTP_429
    if status >= 500:
        return FailureKind.HTTP_5XX
    return FailureKind.HTTP_4XX
