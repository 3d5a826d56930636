"""The headers every console page answers with, and an HTML answer carrying them.

A CSP that admits the console's own stylesheet and script only, no framing, no cache.
"""

from __future__ import annotations

from litestar.datastructures import Cookie
from litestar.response import Response

from gateway.api.console.html import Frame, esc, page
from gateway.domain.errors import GatewayError

POLICY = (
    "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
PAGE_HEADERS = {
    "content-security-policy": POLICY,
    "x-frame-options": "DENY",
    # Not no-referrer: with it Chrome sends "Origin: null" on the page's own form posts,
    # and the Origin check refuses them. Other sites get no referrer either way.
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
}


def html_response(
    text: str,
    status: int = 200,
    cookies: list[Cookie] | None = None,
    headers: dict[str, str] | None = None,
) -> Response[str]:
    return Response(
        text,
        status_code=status,
        media_type="text/html",
        headers={**PAGE_HEADERS, **(headers or {})},
        cookies=cookies or [],
    )


def error_page(error: GatewayError, active: str, csrf: str | None = None) -> Response[str]:
    """``error``'s message as a page of the console, with its status and headers."""
    body = f'<h1>Error</h1><p class="panel">{esc(error.message)}</p>'
    frame = Frame(active, csrf, refresh=False)
    return html_response(page("Error", body, frame), error.http_status, headers=error.headers())
