"""The adapter seam: one protocol every provider implements.

Adapters raise ``UpstreamError`` (gateway/domain/errors/; its ``kind`` is a
``FailureKind``) for every failure, translating httpx/aiohttp failures at this boundary
(``raise ... from exc``): nothing above ``upstream`` sees httpx.

Ignored parameters: a translation that leaves out a request field the provider cannot
honour and that is safe to leave out (it only shapes style, offers a tool the provider
cannot run, or asks for OpenAI-side storage) names it with ``call.ignore(name)``. The
pipeline lists the names of the attempt that served in the ``x-gateway-ignored-params``
header and the row's ``ignored_params`` (docs/telemetry.md). What would change the
answer's meaning is refused instead (``FailureKind.UNTRANSLATABLE``, a 400).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from gateway.domain.model import Endpoint, Model, Provider
from gateway.domain.usage import Usage


@dataclass(slots=True)
class UpstreamCall:
    provider: Provider
    model: Model
    endpoint: Endpoint
    body: dict[str, Any]  # the client's body; adapters swap `model` themselves
    stream: bool
    remaining_seconds: float  # until the call's overall deadline
    headers: dict[str, str] = field(default_factory=dict)  # extra, e.g. x-request-id
    # Request fields this attempt's translation left out (see the module's docstring).
    # Shared by the calls ``dataclasses.replace`` derives from this one.
    ignored: list[str] = field(default_factory=list)

    def ignore(self, name: str) -> None:
        """``name`` (a request parameter, as the client wrote it) was accepted but not
        passed on to the provider."""
        if name not in self.ignored:
            self.ignored.append(name)


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
        raises UpstreamError(kind=FailureKind.STREAM_CUT). ``ask_usage``: request the
        upstream's usage chunk.
        """
        ...
