"""What a call is answered: the answer types, the encodings of a served, cached or failed
answer, and the headers each carries (what served it, what was attempted, the trace, the
rate limits)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import msgspec

from gateway.domain.errors import (
    GatewayError,
    InternalError,
    ModelNotFound,
    UpstreamRejected,
    as_gateway_error,
)
from gateway.domain.model import Configuration, Endpoint
from gateway.hooks import CachedAnswer
from gateway.pipeline.accounting import (
    HIT_COST_USD,
    account_reported,
    believable,
    costless,
    estimate_whole,
    log_invalid_usage,
)
from gateway.pipeline.context import CallContext, Target, trail_of
from gateway.pipeline.limits import limit_headers
from gateway.pipeline.measures import upstream_model
from gateway.pipeline.stream import StreamRelay
from gateway.pricing import format_usd
from gateway.telemetry.access import log_refused
from gateway.telemetry.records import TelemetryRecord
from gateway.tracing import TRACE_HEADER
from gateway.upstream.base import UpstreamReply
from gateway.upstream.redaction import redact_key_bytes, redact_optional
from gateway.usage.tokens import TokenCounter

_ENCODER = msgspec.json.Encoder()
log = logging.getLogger(__name__)
PATHS = {endpoint: endpoint.path for endpoint in Endpoint}


@dataclass(slots=True)
class Answer:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"


def error_answer(error: GatewayError, headers: dict[str, str] | None = None) -> Answer:
    """The one encoding of an error answer: its envelope, its status, its own headers."""
    merged = {**(headers or {}), **error.headers()}
    return Answer(error.http_status, _ENCODER.encode(error.envelope()), merged)


@dataclass(slots=True)
class StreamAnswer:
    headers: dict[str, str]
    relay: StreamRelay


async def answer_whole(
    ctx: CallContext,
    reply: UpstreamReply,
    target: Target,
    counter: TokenCounter,
    *,
    keep_plain: bool,
) -> tuple[Answer, bytes | None]:
    """The answer and, with ``keep_plain``, its body without ``usage.cost`` (what a cache
    keeps); only a cacheable call pays for that second encoding."""
    record = ctx.record
    record.success = True
    record.http_status = 200
    key = target.provider.api_key  # echoed anywhere in the answer, it is redacted
    record.response_model = redact_optional(reply.response_model, key)
    record.upstream_model = upstream_model(target.model.name, record.response_model)
    headers = served_headers(target, record)
    body = reply.body
    if ctx.span is not None:
        ctx.span.note_answer(body)
    invalid = reply.usage is not None and not believable(reply.usage, ctx.request)
    if invalid:
        log_invalid_usage(ctx.request_id, target.model.id)
    if reply.usage is None or invalid:
        request = ctx.request
        await estimate_whole(record, request, target.model, counter, body, invalid=invalid)
        plain = redact_key_bytes(_ENCODER.encode(body), key)
        return Answer(200, plain, headers), plain if keep_plain else None
    amount = account_reported(record, reply.usage, target.model)
    if ctx.span is not None:
        ctx.span.note_cached_tokens(reply.usage.cache_read_tokens)
    usage = body.get("usage")
    if amount is None or not isinstance(usage, dict):
        plain = redact_key_bytes(_ENCODER.encode(body), key)
        return Answer(200, plain, headers), plain if keep_plain else None
    kept = redact_key_bytes(_ENCODER.encode(body), key) if keep_plain else None
    shown = format_usd(amount)
    usage["cost"] = msgspec.Raw(shown.encode("ascii"))  # usd_json_number, formatted once
    headers["x-gateway-cost-usd"] = shown
    return Answer(200, redact_key_bytes(_ENCODER.encode(body), key), headers), kept


def answer_cached(ctx: CallContext, configuration: Configuration, hit: CachedAnswer) -> Answer:
    """Answered without the upstream: not billed (``cost`` 0 in body and header), never
    part of the call history."""
    record = ctx.record
    record.cache_hit = True
    record.success = True
    record.http_status = 200
    record.response_model = hit.response_model
    headers = {
        "x-gateway-configuration": configuration.id,
        "x-gateway-cache": "hit",
        "x-gateway-cost-usd": HIT_COST_USD,
    }
    return Answer(200, costless(hit.body), headers)


def rejected_answer(ctx: CallContext, rejected: UpstreamRejected) -> Answer:
    error = rejected.error
    if error.status is None or not error.body:  # nothing an OpenAI client could read
        ctx.record.error_class = error.error_class
        return failed_answer(ctx, as_gateway_error(error))
    status = error.status
    ctx.record.http_status = status
    ctx.record.error_class = error.error_class
    return Answer(status, error.body, failure_headers(ctx), error.content_type)


def unknown_answer(ctx: CallContext, error: GatewayError) -> Answer:
    """An unknown configuration: an answer and an access line, no row."""
    answer = failed_answer(ctx, error)
    request = ctx.request
    path = PATHS[request.endpoint]
    log_refused(path, answer.status, ctx.elapsed_ms(), ctx.request_id, request.configuration)
    return answer


def unexpected_answer(ctx: CallContext, exc: Exception) -> Answer:
    """A bug of ours: logged with its traceback (the exception's text may quote the
    request, which the log may hold as the access line does), answered 500."""
    log.error("call %s failed: internal error %s", ctx.request_id, type(exc).__name__, exc_info=exc)
    return failed_answer(ctx, InternalError())


def failed_answer(ctx: CallContext, error: GatewayError) -> Answer:
    status = error.http_status
    ctx.record.http_status = status
    if ctx.record.error_class is None and error.error_class is not None:
        ctx.record.error_class = error.error_class
    trail_of(ctx.record).error_message = error.message
    # An unknown configuration is the client's text: it goes in no header.
    known = not isinstance(error, ModelNotFound)
    return error_answer(error, failure_headers(ctx) if known else None)


def trace_header(ctx: CallContext, headers: dict[str, str]) -> None:
    if ctx.span is not None and ctx.span.trace_id is not None:
        headers[TRACE_HEADER] = ctx.span.trace_id


def add_limit_headers(
    ctx: CallContext, headers: dict[str, str], refused: GatewayError | None = None
) -> None:
    """OpenAI's x-ratelimit-* headers, on every answer to a call a rate limit applies to
    (``refused``: the error the answer is, if any)."""
    if ctx.limit_readings or ctx.step_refusal_reading is not None:
        headers.update(limit_headers(ctx, refused))


IGNORED_HEADER = "x-gateway-ignored-params"


def served_headers(target: Target, record: TelemetryRecord) -> dict[str, str]:
    """On an answer a target served: what served it, and the request fields its
    translation accepted without passing them on (the row's ``ignored_params``)."""
    headers = {
        "x-gateway-configuration": target.configuration.id,
        "x-gateway-provider": target.provider.id,
        "x-gateway-model": target.model.id,
    }
    if record.ignored_params:
        headers[IGNORED_HEADER] = record.ignored_params
    return headers


def failure_headers(ctx: CallContext) -> dict[str, str]:
    """On an answer nothing served: the configuration, and what was attempted if anything."""
    record = ctx.record
    headers = {"x-gateway-configuration": ctx.request.configuration}
    if record.provider is not None and record.model is not None:
        headers["x-gateway-provider"] = record.provider
        headers["x-gateway-model"] = record.model
    return headers
