"""The proxied OpenAI endpoints as raw ASGI handlers.

The hot path skips Litestar's request parsing and response machinery (the
measured cost of a framework layer per call); everything else in the app is
ordinary Litestar. Bodies are read once, bounded by ``server.maxBodyBytes``.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from typing import cast

import msgspec
from litestar import asgi
from litestar.types import ASGIApp, Receive, Scope, Send

from gateway.api.connection import EDGE_KEY, EdgeProtocol
from gateway.api.messages_errors import anthropic_errors
from gateway.domain.errors import (
    AuthenticationFailed,
    GatewayError,
    InvalidRequest,
    MethodNotAllowed,
    RequestTooLarge,
)
from gateway.domain.model import Endpoint
from gateway.inbound import parse_inbound, refused_request
from gateway.pipeline.answers import Answer, StreamAnswer, error_answer
from gateway.runtime import Runtime
from gateway.telemetry.access import log_refused

_ENCODER = msgspec.json.Encoder()
# Kept as sent when it is printable ASCII that fits the telemetry column; else one is made.
_REQUEST_ID = re.compile(r"^[\x20-\x7e]{1,128}$")
_STREAM_HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]


def _runtime(scope: Scope) -> Runtime:
    runtime: Runtime = scope["litestar_app"].state.runtime
    return runtime


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return value.decode("latin-1")
    return None


def _trace_carrier(scope: Scope) -> dict[str, str]:
    """The client's W3C trace context headers (telemetry.otel continues its trace)."""
    carrier: dict[str, str] = {}
    for key, value in scope["headers"]:
        if key == b"traceparent" or key == b"tracestate":
            carrier[key.decode()] = value.decode("latin-1")
    return carrier


# The client headers /v1/messages forwards to an Anthropic provider.
_FORWARDED_MESSAGES_HEADERS = (b"anthropic-version", b"anthropic-beta")


def authorization_of(scope: Scope, *, api_key_header: bool) -> str | None:
    """The ``Authorization`` header; with ``api_key_header`` (Anthropic's APIs), an
    ``x-api-key: <key>`` stands for ``Authorization: Bearer <key>`` when it is absent."""
    authorization = _header(scope, b"authorization")
    if authorization is None and api_key_header:
        presented = _header(scope, b"x-api-key")
        if presented:
            return f"Bearer {presented}"
    return authorization


def _forwarded(scope: Scope) -> dict[str, str]:
    return {
        key.decode(): value.decode("latin-1")
        for key, value in scope["headers"]
        if key in _FORWARDED_MESSAGES_HEADERS
    }


def _no_cache(value: str | None) -> bool:
    """``x-gateway-cache: no-cache`` (among comma-separated directives) bypasses the cache."""
    if not value:
        return False
    return "no-cache" in (part.strip().lower() for part in value.split(","))


def request_id_of(scope: Scope) -> str:
    """The caller's x-request-id when it is well formed, else a fresh one."""
    inbound = _header(scope, b"x-request-id")
    if inbound and _REQUEST_ID.match(inbound):
        return inbound
    return os.urandom(16).hex()  # 128 random bits as uuid4().hex, a tenth of its cost


async def read_body(scope: Scope, receive: Receive, limit: int) -> bytes:
    declared = _header(scope, b"content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise RequestTooLarge(f"The request body exceeds {limit} bytes.")
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise InvalidRequest("The client disconnected while sending the body.")
        chunk: bytes = message.get("body", b"")  # type: ignore[assignment]
        size += len(chunk)
        if size > limit:
            raise RequestTooLarge(f"The request body exceeds {limit} bytes.")
        parts.append(chunk)
        if not message.get("more_body", False):
            return b"".join(parts)


async def send_answer(send: Send, answer: Answer, request_id: str) -> None:
    headers: list[tuple[bytes, bytes]] = [
        (b"content-type", answer.content_type.encode("latin-1")),
        (b"content-length", str(len(answer.body)).encode()),
        (b"x-request-id", request_id.encode()),
    ]
    headers.extend((k.encode(), v.encode("latin-1")) for k, v in answer.headers.items())
    await send({"type": "http.response.start", "status": answer.status, "headers": headers})
    await send({"type": "http.response.body", "body": answer.body, "more_body": False})


async def _refuse(
    scope: Scope, send: Send, answer: Answer, request_id: str, endpoint: Endpoint, started: float
) -> None:
    """An answer before the pipeline (no row): still one access line."""
    await send_answer(send, answer, request_id)
    elapsed_ms = (time.perf_counter() - started) * 1000.0
    method = str(scope.get("method", "POST"))
    log_refused(endpoint.path, answer.status, elapsed_ms, request_id, method=method)


async def _proxy(endpoint: Endpoint, scope: Scope, receive: Receive, send: Send) -> None:
    started = time.perf_counter()
    request_id = request_id_of(scope)
    if scope.get("method") != "POST":
        refusal = MethodNotAllowed(f"Use POST for /v1/{endpoint.value}.")
        await _refuse(scope, send, error_answer(refusal), request_id, endpoint, started)
        return
    # One configuration for the whole call: a reload meanwhile serves the next one.
    runtime = _runtime(scope)
    serving = runtime.serving
    try:
        key = None
        messages = endpoint is Endpoint.MESSAGES
        if not serving.keys.open:
            authorization = authorization_of(scope, api_key_header=messages)
            key = runtime.directory.identify(authorization)
            if key is None:
                raise AuthenticationFailed("Missing or invalid API key.")
        raw = await read_body(scope, receive, serving.config.server.max_body_bytes)
    except GatewayError as error:
        await _refuse(scope, send, error_answer(error), request_id, endpoint, started)
        return
    try:
        request = parse_inbound(endpoint, raw)
        request.cache_bypass = _no_cache(_header(scope, b"x-gateway-cache"))
        if messages:
            request.forward_headers = _forwarded(scope)
    except InvalidRequest as error:
        named = refused_request(endpoint, raw)
        if named is not None:  # it named a configuration: a row, like any call
            ctx = serving.pipeline.context(named, key, request_id, _trace_carrier(scope))
            await send_answer(send, await serving.pipeline.refuse(ctx, error), request_id)
            return
        await _refuse(scope, send, error_answer(error), request_id, endpoint, started)
        return
    # The body's bytes, parsed now: not held by this frame for as long as a stream lasts
    # (a long conversation's body is tens of KiB).
    del raw
    pipeline = serving.pipeline
    ctx = pipeline.context(request, key, request_id, _trace_carrier(scope))
    if request.stream:
        outcome = await pipeline.stream(ctx)
        if isinstance(outcome, StreamAnswer):
            await _send_stream(scope, send, receive, outcome, request_id)
            return
        await send_answer(send, outcome, request_id)
        return
    await send_answer(send, await pipeline.complete(ctx), request_id)


async def _send_stream(
    scope: Scope, send: Send, receive: Receive, answer: StreamAnswer, request_id: str
) -> None:
    headers = list(_STREAM_HEADERS)
    headers.append((b"x-request-id", request_id.encode()))
    try:
        headers.extend((k.encode(), v.encode("latin-1")) for k, v in answer.headers.items())
        await send({"type": "http.response.start", "status": 200, "headers": headers})
    except BaseException:
        await answer.relay.abandon()  # the upstream stream is closed and the call recorded
        raise

    async def emit(data: bytes) -> None:
        await send({"type": "http.response.body", "body": data, "more_body": True})

    # The server's send() goes quiet once the client is gone, so a disconnect while the
    # upstream stream is read cancels the relay (which then closes the upstream stream and
    # records the call) rather than letting it read a paid answer nobody receives. The
    # gateway's own connection protocol says so by a callback; under another server a
    # watcher task waits on receive().
    relay = asyncio.current_task()
    assert relay is not None
    hung_up = False

    def lost() -> None:
        nonlocal hung_up
        if answer.relay.answered:
            return  # a client closing after the answer's end does not cut its accounting short
        hung_up = True
        relay.cancel()

    edge = cast("EdgeProtocol | None", scope.get(EDGE_KEY))
    watcher = None
    if edge is not None:
        edge.on_disconnect(lost)
    else:

        async def watch() -> None:
            await _disconnected(receive)
            lost()

        watcher = asyncio.create_task(watch())
    try:
        await answer.relay.run(emit)
    except asyncio.CancelledError:
        if not hung_up:
            raise  # not ours: the server is shutting down
        relay.uncancel()
        return
    finally:
        if edge is not None:
            edge.on_disconnect(None)
        if watcher is not None:
            watcher.cancel()
    await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _disconnected(receive: Receive) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return


def _raw(endpoint: Endpoint) -> ASGIApp:
    async def handler(scope: Scope, receive: Receive, send: Send) -> None:
        await _proxy(endpoint, scope, receive, send)

    handler.__name__ = f"proxy_{endpoint.name.lower()}"
    # Anthropic's Messages API answers its errors in Anthropic's envelope.
    return anthropic_errors(handler) if endpoint is Endpoint.MESSAGES else handler


COUNT_TOKENS_PATH = "/v1/messages/count_tokens"


async def _count_tokens(scope: Scope, receive: Receive, send: Send) -> None:
    """``POST /v1/messages/count_tokens`` (gateway.pipeline.count_tokens): no call, no row."""
    started = time.perf_counter()
    request_id = request_id_of(scope)
    endpoint = Endpoint.MESSAGES
    serving = _runtime(scope).serving
    try:
        if scope.get("method") != "POST":
            raise MethodNotAllowed(f"Use POST for {COUNT_TOKENS_PATH}.")
        key = None
        if not serving.keys.open:
            key = _runtime(scope).directory.identify(authorization_of(scope, api_key_header=True))
            if key is None:
                raise AuthenticationFailed("Missing or invalid API key.")
        raw = await read_body(scope, receive, serving.config.server.max_body_bytes)
        request = parse_inbound(endpoint, raw)
        request.forward_headers = _forwarded(scope)
        answer = await serving.counting.count(request, key, request_id)
    except GatewayError as error:
        answer = error_answer(error)
    await send_answer(send, answer, request_id)
    elapsed_ms = (time.perf_counter() - started) * 1000.0
    if answer.status >= 400:
        method = str(scope.get("method", "POST"))
        log_refused(COUNT_TOKENS_PATH, answer.status, elapsed_ms, request_id, method=method)


# What the app dispatches to before its router (gateway.api.app.GatewayApp), by exact path.
RAW_HANDLERS: dict[str, ASGIApp] = {endpoint.path: _raw(endpoint) for endpoint in Endpoint}
RAW_HANDLERS[COUNT_TOKENS_PATH] = anthropic_errors(_count_tokens)
# The same endpoints as routes of the router, for the paths it matches and the exact ones don't
# (a trailing slash).
PROXY_HANDLERS = [asgi(path, copy_scope=False)(handler) for path, handler in RAW_HANDLERS.items()]
