"""The adapter seam: one protocol every provider implements.

    UpstreamError                 raised by adapters, classified by ``kind`` (a
                                  ``FailureKind``, gateway/domain/failures.py)

Adapters translate httpx/aiohttp failures into ``UpstreamError`` at this
boundary (``raise ... from exc``); nothing above ``upstream`` sees httpx.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from gateway.domain.failures import ERROR_CLASS, RETRYABLE_KINDS, ErrorClass, FailureKind
from gateway.domain.model import Model, Provider
from gateway.domain.usage import Usage
from gateway.inbound import Endpoint


class UpstreamError(Exception):
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
        if self._retryable is not None:
            return self._retryable
        return self.kind in RETRYABLE_KINDS

    @property
    def error_class(self) -> ErrorClass:
        return ERROR_CLASS[self.kind]


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
