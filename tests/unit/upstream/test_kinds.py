"""How an upstream status becomes a failure kind, a row's error_class and a retry decision."""

from __future__ import annotations

import pytest

from gateway.domain.errors import UpstreamError
from gateway.domain.failures import FailureKind, kind_for_status
from gateway.upstream.retry import should_retry


@pytest.mark.parametrize(
    ("status", "kind", "error_class", "retryable"),
    [
        (301, "invalid_response", "invalid_upstream_response", True),
        (307, "invalid_response", "invalid_upstream_response", True),
        (400, "http_4xx", "upstream_4xx", False),
        (401, "auth_rejected", "upstream_auth", True),
        (403, "auth_rejected", "upstream_auth", True),
        (404, "http_4xx", "upstream_4xx", False),
        (408, "http_408", "upstream_5xx", True),
        (429, "http_429", "upstream_429", True),
        (503, "http_5xx", "upstream_5xx", True),
    ],
)
def test_each_status_has_its_kind_and_row_class(
    status: int, kind: str, error_class: str, retryable: bool
) -> None:
    assert kind_for_status(status) == kind
    error = UpstreamError(FailureKind(kind), "x", status=status)
    assert (error.error_class, error.retryable) == (error_class, retryable)


def test_a_refused_credential_falls_back_but_is_never_retried_on_its_provider() -> None:
    refused = UpstreamError(
        FailureKind.AUTH_REJECTED, "provider p rejected the gateway's credentials"
    )
    assert refused.retryable  # the fallbacks may answer
    assert not should_retry(refused, attempt=0, max_retries=5)
    assert should_retry(UpstreamError(FailureKind.INVALID_RESPONSE, "a redirect"), 0, 5)
