"""classify_transport_error: an httpx or aiohttp failure named by its FailureKind.

httpx-aiohttp raises an httpx exception for every aiohttp failure (most as timeouts), with
the aiohttp error as its cause: the cause decides when there is one.
"""

from __future__ import annotations

import aiohttp
import httpx
import pytest

from gateway.domain.failures import FailureKind
from gateway.upstream.exchange import classify_transport_error


def _caused(outer: Exception, cause: BaseException) -> Exception:
    outer.__cause__ = cause
    return outer


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (httpx.ConnectTimeout("t"), FailureKind.TIMEOUT),
        (httpx.ReadTimeout("t"), FailureKind.TIMEOUT),
        (httpx.PoolTimeout("t"), FailureKind.TIMEOUT),
        (httpx.ConnectError("refused"), FailureKind.CONNECT),
        (httpx.RemoteProtocolError("reset"), FailureKind.CONNECT),
        (httpx.ReadError("reset"), FailureKind.CONNECT),
        (httpx.DecodingError("bad"), FailureKind.CONNECT),
        (aiohttp.ServerTimeoutError("t"), FailureKind.TIMEOUT),
        (aiohttp.ServerDisconnectedError(), FailureKind.CONNECT),
        (aiohttp.ClientConnectionError("refused"), FailureKind.CONNECT),
        (aiohttp.ClientPayloadError("cut"), FailureKind.CONNECT),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, Exception) else str(v),
)
def test_each_failure_has_its_kind(exc: Exception, kind: FailureKind) -> None:
    error = classify_transport_error(exc)
    assert error.kind is kind
    assert error.retryable


def test_the_aiohttp_cause_decides_over_httpx_s_timeout() -> None:
    """A refused connection that httpx-aiohttp reports as a timeout is a connect failure."""
    refused = _caused(httpx.ConnectTimeout("t"), aiohttp.ClientConnectionError("refused"))
    assert classify_transport_error(refused).kind is FailureKind.CONNECT
    timed_out = _caused(httpx.ReadError("x"), aiohttp.ServerTimeoutError("t"))
    assert classify_transport_error(timed_out).kind is FailureKind.TIMEOUT
    asyncio_timeout = _caused(httpx.ReadError("x"), TimeoutError())
    assert classify_transport_error(asyncio_timeout).kind is FailureKind.TIMEOUT


def test_the_message_names_the_failure_and_nothing_it_carried() -> None:
    secret = "http://127.0.0.1:1/v1?key=sk-test-secret"
    error = classify_transport_error(httpx.ConnectError(f"cannot reach {secret}"))
    assert error.message == "could not reach the upstream: ConnectError"
    assert "sk-test" not in error.message
    other = classify_transport_error(httpx.DecodingError(secret))
    assert other.message == "upstream transport failed: DecodingError"
