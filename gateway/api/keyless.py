"""Keyless mode (``auth.allowUnauthenticated`` and no key): only this machine's own clients.

Without a key, whatever reaches the gateway spends the provider bill. It binds to
loopback then, but a web page the operator has open can still reach it: a
cross-site form or ``fetch`` posts ``text/plain`` without a CORS preflight, and
DNS rebinding points the page's own host name at 127.0.0.1 so that it reads
the answers as same-origin. So in this mode a request must

- name a loopback host (``localhost``, ``127.0.0.1`` or ``[::1]``, any port) in
  ``Host``: 421 otherwise (a rebound name arrives with the page's host);
- not come from another site: an ``Origin`` that is not loopback, or
  ``Sec-Fetch-Site: cross-site`` (except a top-level GET navigation, which
  shows the answer to the user, not to the page), gets 403;
- send a POST body as ``Content-Type: application/json``: 415 otherwise (a
  page can send that type only after a preflight the gateway never grants).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Receive, Scope, Send

from gateway.api.connection import error_head
from gateway.domain.errors import (
    CrossSiteRequest,
    GatewayError,
    HostNotAllowed,
    UnsupportedMediaType,
)

_LOOPBACK_NAMES = frozenset({b"localhost", b"127.0.0.1", b"[::1]"})
_SAME_SITE = frozenset({b"same-origin", b"same-site", b"none"})
_WATCHED = frozenset({b"host", b"origin", b"sec-fetch-site", b"sec-fetch-mode", b"content-type"})

_HOST = (
    "Keyless mode answers only requests addressed to localhost or a loopback address "
    "(127.0.0.1, [::1]); "
    "this one named another host, as a DNS-rebinding web page does. "
    "Configure gateway keys (auth.keys) to serve other names."
)
_CROSS_SITE = (
    "Keyless mode refuses requests sent by web pages of other sites (Origin, "
    "Sec-Fetch-Site). Configure gateway keys (auth.keys) to serve browsers."
)
_MEDIA_TYPE = "Keyless mode accepts a POST body only as Content-Type: application/json."


def is_loopback_host(value: bytes) -> bool:
    """``value`` is a Host header naming a loopback address, with or without a port."""
    host = value.strip().lower()
    if host.startswith(b"["):
        end = host.find(b"]") + 1  # 0 when unclosed: no name matches
        name, rest = host[:end], host[end:]
    else:
        name, colon, port = host.partition(b":")
        rest = colon + port
    if rest and not (rest.startswith(b":") and rest[1:].isdigit()):
        return False
    return name in _LOOPBACK_NAMES or _is_loopback_literal(name)


def _is_loopback_literal(name: bytes) -> bool:
    """Any address of 127.0.0.0/8 or ``[::1]`` spelled as an IP literal (``127.0.0.2``)."""
    text = name[1:-1] if name.startswith(b"[") else name
    try:
        return ipaddress.ip_address(text.decode("ascii")).is_loopback
    except (ValueError, UnicodeDecodeError):
        return False


def is_loopback_origin(value: bytes) -> bool:
    scheme, separator, host = value.strip().lower().partition(b"://")
    return bool(separator) and scheme in (b"http", b"https") and is_loopback_host(host)


def keyless_refusal(method: str, headers: Iterable[tuple[bytes, bytes]]) -> GatewayError | None:
    """Why keyless mode refuses a request with these headers, or None to serve it."""
    seen: dict[bytes, bytes] = {}
    for name, value in headers:
        if name in _WATCHED:
            seen.setdefault(name, value)
    host = seen.get(b"host")
    if host is None or not is_loopback_host(host):
        return HostNotAllowed(_HOST)
    origin = seen.get(b"origin")
    if origin is not None and not is_loopback_origin(origin):
        return CrossSiteRequest(_CROSS_SITE)
    site = seen.get(b"sec-fetch-site", b"none").lower()
    navigation = method == "GET" and seen.get(b"sec-fetch-mode", b"").lower() == b"navigate"
    if site not in _SAME_SITE and not navigation:
        return CrossSiteRequest(_CROSS_SITE)
    if method == "POST":
        media_type = seen.get(b"content-type", b"").partition(b";")[0].strip().lower()
        if media_type != b"application/json":
            return UnsupportedMediaType(_MEDIA_TYPE)
    return None


def keyless_guard(app: ASGIApp) -> ASGIApp:
    """Pure ASGI middleware applying ``keyless_refusal``; installed only in keyless mode."""

    async def guard(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == ScopeType.HTTP:
            refusal = keyless_refusal(scope["method"], scope["headers"])
            if refusal is not None:
                headers, body = error_head(refusal)
                status = refusal.http_status
                await send({"type": "http.response.start", "status": status, "headers": headers})
                await send({"type": "http.response.body", "body": body, "more_body": False})
                return
        await app(scope, receive, send)

    return guard
