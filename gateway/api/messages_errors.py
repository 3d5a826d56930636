"""Anthropic's error envelope on the Messages API's routes: a pure ASGI wrapper of ``send``.

Every error answer the gateway writes on ``/v1/messages`` (its own, an upstream's relayed,
an unexpected failure's) goes through the one encoder of the other endpoints; this wrapper
rewrites the whole-answer ones into Anthropic's envelope and status
(gateway.messages.errors). Streams (200) and successes pass untouched; errors inside a
stream are written as Anthropic ``error`` events by the relay itself.
"""

from __future__ import annotations

import logging
from typing import Any

import msgspec
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from gateway.domain.errors import GatewayError, as_gateway_error
from gateway.messages.errors import translate_error

log = logging.getLogger(__name__)
_ENCODER = msgspec.json.Encoder()
_ENCODED = frozenset({b"content-length", b"content-type"})
Headers = list[tuple[bytes, bytes]]


def anthropic_errors(app: ASGIApp) -> ASGIApp:
    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        held: tuple[int, Headers] | None = None
        started = False

        async def send_translated(message: Message) -> None:
            nonlocal held, started
            event: dict[str, Any] = message  # type: ignore[assignment]
            if event["type"] == "http.response.start":
                started = True
                if event["status"] >= 400:
                    held = (event["status"], list(event.get("headers", [])))
                    return  # its body decides its status and length
            elif held is not None and event["type"] == "http.response.body":
                (status, headers), held = held, None
                await _send_error(send, status, headers, bytes(event.get("body", b"")))
                return
            await send(message)

        try:
            await app(scope, receive, send_translated)
        except Exception as exc:
            if started:
                raise
            if not isinstance(exc, GatewayError):
                log.error("unhandled %s on %s", type(exc).__name__, scope["path"])
            error = as_gateway_error(exc)
            headers = [(k.encode(), v.encode("latin-1")) for k, v in error.headers().items()]
            body = _ENCODER.encode(error.envelope())
            await _send_error(send, error.http_status, headers, body)

    return wrapped


async def _send_error(send: Send, status: int, headers: Headers, body: bytes) -> None:
    request_id = next((v.decode("latin-1") for k, v in headers if k == b"x-request-id"), None)
    status, body = translate_error(status, body, request_id)
    kept = [(k, v) for k, v in headers if k.lower() not in _ENCODED]
    kept.append((b"content-type", b"application/json"))
    kept.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": kept})
    await send({"type": "http.response.body", "body": body, "more_body": False})
