"""The process's one pooled upstream client.

httpx keeps its API (and ``MockTransport`` for tests); aiohttp underneath
(httpx-aiohttp) because httpx's default transport was the largest single
cost measured on this machine (PERFORMANCE.md). ``GATEWAY_UPSTREAM_TRANSPORT=httpx``
selects the default transport, for benchmarks.
"""

from __future__ import annotations

import os

import aiohttp
import httpx
from httpx_aiohttp import AiohttpTransport

Transport = httpx.AsyncBaseTransport  # what tests may plug in (e.g. httpx.MockTransport)

POOL_LIMITS = httpx.Limits(max_connections=512, max_keepalive_connections=128, keepalive_expiry=30)


def make_client(transport: httpx.AsyncBaseTransport | None = None) -> httpx.AsyncClient:
    if transport is None:
        transport = _default_transport()
    return httpx.AsyncClient(
        transport=transport, limits=POOL_LIMITS, follow_redirects=False, trust_env=False
    )


def _default_transport() -> httpx.AsyncBaseTransport:
    if os.environ.get("GATEWAY_UPSTREAM_TRANSPORT", "aiohttp") == "httpx":
        return httpx.AsyncHTTPTransport(limits=POOL_LIMITS)
    return AiohttpTransport(limits=POOL_LIMITS, client=_aiohttp_session)


def _aiohttp_session() -> aiohttp.ClientSession:
    connector = aiohttp.TCPConnector(limit=POOL_LIMITS.max_connections or 0, keepalive_timeout=30)
    # auto_decompress is set per request by the transport; no cookies: a proxy keeps no state.
    return aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar())


def timeout_for(read_timeout: float, remaining: float) -> httpx.Timeout:
    """``timeoutSeconds`` bounds connecting and each wait for bytes; never past the deadline."""
    per_wait = max(0.001, min(read_timeout, remaining))
    return httpx.Timeout(per_wait, pool=per_wait)
