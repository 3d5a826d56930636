"""The process's one pooled upstream client.

httpx keeps its API (and ``MockTransport`` for tests); aiohttp underneath
(httpx-aiohttp) because httpx's default transport was the largest single
cost measured on this machine (PERFORMANCE.md). ``GATEWAY_UPSTREAM_TRANSPORT=httpx``
selects the default transport, for benchmarks.
"""

from __future__ import annotations

import functools
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass

import aiohttp
import httpx
from httpx_aiohttp import AiohttpTransport

Transport = httpx.AsyncBaseTransport  # what tests may plug in (e.g. httpx.MockTransport)

POOL_LIMITS = httpx.Limits(max_connections=512, max_keepalive_connections=128, keepalive_expiry=30)


@dataclass(frozen=True, slots=True)
class ReadLimits:
    """How much of an upstream answer the gateway holds at once (``server.maxUpstream*``)."""

    body_bytes: int = 64 * 1024 * 1024  # a whole (non-stream) answer
    event_bytes: int = 8 * 1024 * 1024  # one event of a stream


class UpstreamHTTP:
    """The process's one pooled client, and the way calls reach its transport.

    Calls go straight to the client's transport with a prepared ``httpx.Request``:
    a proxy wants none of the client's redirect, auth-flow or cookie handling (a
    cookie jar shared by every tenant would hand one caller's cookies to the
    next), and skipping those layers saved ~0.15 ms a call here.
    """

    def __init__(
        self, transport: httpx.AsyncBaseTransport | None = None, limits: ReadLimits | None = None
    ) -> None:
        self.limits = limits or ReadLimits()
        self.transport = transport or _default_transport()
        self.client = httpx.AsyncClient(
            transport=self.transport, limits=POOL_LIMITS, follow_redirects=False, trust_env=False
        )

    async def post(
        self, url: httpx.URL, headers: dict[str, str], content: bytes, wait_seconds: float
    ) -> httpx.Response:
        """``wait_seconds`` bounds connecting and each wait for bytes (not the whole body).

        The headers arrive complete (host and content-length included) and the body as a
        byte stream already read, which spares httpx's per-header normalisation: about
        15-20 µs a call here.
        """
        raw = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in headers.items()]
        raw.append((b"host", url.netloc))
        raw.append((b"content-length", str(len(content)).encode()))
        limit = wait_seconds
        request = httpx.Request(
            "POST",
            url,
            headers=raw,
            stream=httpx.ByteStream(content),
            extensions={
                "timeout": {"connect": limit, "read": limit, "write": limit, "pool": limit}
            },
        )
        request.read()  # the body is in memory: transports may read .content directly
        return await self.transport.handle_async_request(request)

    async def aclose(self) -> None:
        await self.client.aclose()


async def body_chunks(response: httpx.Response) -> AsyncIterator[bytes]:
    """The body as it arrives; a transport that read it already (MockTransport) gives it whole."""
    try:
        content = response.content
    except httpx.ResponseNotRead:
        async for chunk in response.aiter_raw():
            yield chunk
        return
    if content:
        yield content


@functools.lru_cache(maxsize=1024)
def parse_url(url: str) -> httpx.URL:
    """Parsed once per provider and endpoint, not per call."""
    return httpx.URL(url)


def _default_transport() -> httpx.AsyncBaseTransport:
    if os.environ.get("GATEWAY_UPSTREAM_TRANSPORT", "aiohttp") == "httpx":
        return httpx.AsyncHTTPTransport(limits=POOL_LIMITS)
    return AiohttpTransport(limits=POOL_LIMITS, client=_aiohttp_session)


def _aiohttp_session() -> aiohttp.ClientSession:
    connector = aiohttp.TCPConnector(limit=POOL_LIMITS.max_connections or 0, keepalive_timeout=30)
    # auto_decompress is set per request by the transport; no cookies: a proxy keeps no state.
    return aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar())


def timeout_for(read_timeout: float, remaining: float) -> float:
    """``timeoutSeconds`` bounds connecting and each wait for bytes; never past the deadline."""
    return max(0.001, min(read_timeout, remaining))
