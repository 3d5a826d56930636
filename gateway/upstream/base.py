"""The adapter seam: one protocol every provider implements.

    UpstreamError                 raised by adapters, classified by ``kind``
      kinds: timeout, connect, http_5xx, http_429, http_408, http_4xx,
             auth_rejected (401/403), invalid_response (3xx too),
             oversize (an answer or event past its size cap), stream_cut

Adapters translate httpx/aiohttp failures into ``UpstreamError`` at this
boundary (``raise ... from exc``); nothing above ``upstream`` sees httpx.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from gateway.domain.model import Model, Provider
from gateway.domain.usage import Usage
from gateway.inbound import Endpoint

# An unusable 2xx answer (invalid JSON, no message, too large) or a redirect is the
# provider's fault, like a 5xx. "Retryable" means another attempt may answer: a retry
# or a fallback.
RETRYABLE_KINDS = frozenset(
    {
        "timeout",
        "connect",
        "http_5xx",
        "http_429",
        "http_408",
        "invalid_response",
        "auth_rejected",
        "oversize",
    }
)

# Failures another try on the same provider cannot mend: only the fallbacks may answer.
# A provider refusing the gateway's own credentials refuses them again a moment later;
# an answer too large to read would come back just as large.
SAME_PROVIDER_FUTILE = frozenset({"circuit_open", "auth_rejected", "oversize"})

# The telemetry row's error_class for each kind.
ERROR_CLASS = {
    "timeout": "upstream_timeout",
    "connect": "upstream_connect",
    "http_5xx": "upstream_5xx",
    "http_429": "upstream_429",
    "http_408": "upstream_5xx",
    "http_4xx": "upstream_4xx",
    "auth_rejected": "upstream_auth",
    "invalid_response": "invalid_upstream_response",
    "oversize": "invalid_upstream_response",
    "stream_cut": "stream_cut",
    "circuit_open": "circuit_open",
}


class UpstreamError(Exception):
    def __init__(
        self,
        kind: str,
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
        if self._retryable is not None:
            return self._retryable
        return self.kind in RETRYABLE_KINDS

    @property
    def error_class(self) -> str:
        return ERROR_CLASS.get(self.kind, "upstream_5xx")


def kind_for_status(status: int) -> str:
    if status in (401, 403):  # the gateway's credentials, not the caller's request
        return "auth_rejected"
    if status < 400:  # a redirect: never followed, so the answer is unusable
        return "invalid_response"
    if status == 408:
        return "http_408"
    if status == 429:
        return "http_429"
    if status >= 500:
        return "http_5xx"
    return "http_4xx"


@dataclass(slots=True)
class UpstreamCall:
    provider: Provider
    model: Model
    endpoint: Endpoint
    body: dict[str, Any]  # the client's body; adapters swap `model` themselves
    stream: bool
    remaining_seconds: float  # until the call's overall deadline
    headers: dict[str, str] = field(default_factory=dict)  # extra, e.g. x-request-id


@dataclass(slots=True)
class UpstreamReply:
    """A whole (non-stream) 2xx answer, already in OpenAI's shape."""

    body: dict[str, Any]
    usage: Usage | None
    response_model: str | None


class Adapter(Protocol):
    async def complete(self, call: UpstreamCall) -> UpstreamReply:
        """Send a whole request; raise UpstreamError for anything but a usable 2xx."""
        ...

    async def open_stream(self, call: UpstreamCall, ask_usage: bool) -> AsyncIterator[bytes]:
        """Open a stream, raising UpstreamError before the first byte if it fails.

        The iterator yields OpenAI-shaped SSE bytes; a failure while iterating
        raises UpstreamError(kind="stream_cut"). ``ask_usage``: request the
        upstream's usage chunk.
        """
        ...
