"""The streaming dispatcher: relay upstream SSE events as they arrive, capture usage.

Each upstream event goes out byte-identical as soon as it is complete, except the
usage chunk the gateway asked for (stripped unless the client asked for it too,
and then carrying ``cost``), an upstream error event (re-encoded as an envelope
without the provider key) and an event that holds the provider key (redacted: the
decoder hands over whole events, so a key split across reads is seen whole). A
failure after the first byte ends the stream with an SSE error event and no
``[DONE]``: an upstream error event, an event that is not JSON (never passed on: the
client's SDK would choke on it), an event larger than ``server.maxUpstreamEventBytes``
(read no further), a cut. A client disconnect closes the upstream stream. Either way
the call's row is recorded.

The generated text is counted as it goes by (``TokenTally``), a buffer at a time in
a counting thread, so that no stream keeps its text.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from decimal import Decimal
from typing import Any

import msgspec

from gateway.domain.errors import UNEXPECTED_MESSAGE, UpstreamError, envelope
from gateway.domain.failures import ErrorClass, FailureKind
from gateway.messages.errors import stream_error_event
from gateway.pipeline.accounting import (
    account_estimated,
    account_reported,
    believable,
    log_invalid_usage,
)
from gateway.pipeline.context import CallContext, Target
from gateway.pipeline.measures import upstream_model
from gateway.pipeline.stream_open import Held, OpenedStream, close_stream
from gateway.pricing import cost
from gateway.streaming.messages_stream import MessagesStreamTracker, with_message_cost
from gateway.streaming.openai_stream import Observation, with_cost
from gateway.streaming.responses_stream import ResponsesStreamTracker, with_response_cost
from gateway.streaming.sse import EventTooLarge, RawEvent, encode_event
from gateway.upstream.error_body import redact_json, stream_error_envelope
from gateway.upstream.redaction import key_spellings, redact_bytes, redact_optional
from gateway.usage.estimate import (
    INLINE_CHARS,
    count_text_bounded,
    known_prompt_tokens,
    off_loop,
    prompt_tokens,
    prompt_upper_bound,
)
from gateway.usage.tokens import TokenCounter

log = logging.getLogger(__name__)

Emit = Callable[[bytes], Awaitable[None]]
Keep = Callable[[dict[str, Any]], None]
_ENCODER = msgspec.json.Encoder()
INVALID = ErrorClass.INVALID_UPSTREAM_RESPONSE
# The code of the error event that ends a broken stream, by the row's error_class.
_STREAM_CODES = {INVALID: "invalid_upstream_response"}
_NOT_JSON = "The upstream sent an event that is not JSON; the stream ends here."


class StreamRelay:
    def __init__(
        self,
        ctx: CallContext,
        target: Target,
        opened: OpenedStream,
        counter: TokenCounter,
        finish: Callable[[CallContext], Awaitable[None]],
    ) -> None:
        self.ctx = ctx
        self.target = target
        self._chunks = opened.chunks
        self._decoder = opened.decoder
        self._tracker = opened.tracker
        self._held = opened.held
        self._counter = counter
        self._finish = finish
        self._include_usage = ctx.request.include_usage
        # On /v1/responses and /v1/messages the usage is in an event the client reads anyway.
        self._typed = isinstance(opened.tracker, (ResponsesStreamTracker, MessagesStreamTracker))
        self._invalid = False  # an event that is not JSON ended the stream
        self._reading = True  # the upstream stream is being read
        api_key = target.provider.api_key
        self._key = key_spellings(api_key) if api_key else ()

    @property
    def answered(self) -> bool:
        """The answer's end has gone to the client, or the upstream stream is over. A client
        that hangs up before stops a paid answer nobody receives; one that closes after it
        (the openai SDK does at [DONE]) cuts nothing short: counting the answer's text, the
        row and the holds are the call's own."""
        return self._tracker.done or not self._reading

    async def run(self, emit: Emit) -> None:
        record = self.ctx.record
        record.http_status = 200
        try:
            try:
                await self._relay(emit)
            finally:
                self._reading = False
            if self._invalid:
                record.error_class = INVALID
                await emit(self._error_event(_NOT_JSON, _STREAM_CODES[INVALID]))
            elif self._tracker.error is not None:
                record.error_class = ErrorClass.UPSTREAM_5XX
            elif not (self._tracker.done or self._tracker.finish_reason):
                record.error_class = ErrorClass.STREAM_CUT
                message = "The upstream stream ended before it was complete."
                await emit(self._error_event(message, "stream_cut"))
            else:
                record.success = True
        except EventTooLarge as error:
            record.error_class = INVALID
            message = f"The upstream sent a stream event larger than {error.limit} bytes."
            await emit(self._error_event(message, _STREAM_CODES[INVALID]))
        except UpstreamError as error:
            record.error_class = error.error_class  # oversize: invalid_upstream_response
            code = _STREAM_CODES.get(error.error_class, "stream_cut")
            broke = f"The upstream stream broke: {error.message}"
            await emit(
                self._error_event(
                    _NOT_JSON if error.kind is FailureKind.INVALID_RESPONSE else broke, code
                )
            )
        except Exception as exc:  # a bug of ours mid-stream: the provider is not blamed
            log.error(
                "call %s: internal error relaying the stream", self.ctx.request_id, exc_info=exc
            )
            record.error_class = ErrorClass.INTERNAL_ERROR
            await emit(self._error_event(UNEXPECTED_MESSAGE, "internal_error"))
        except (asyncio.CancelledError, GeneratorExit):
            if self._tracker.done:  # the client hung up after the whole answer: a success
                record.success = True
            else:
                record.error_class = ErrorClass.CLIENT_DISCONNECTED
            raise
        finally:
            try:
                await close_stream(self._chunks)
            finally:
                # Even when a cancellation lands while closing: the row is recorded (end()
                # does that before its first await) and the budget hold settled.
                try:
                    await self._account()
                finally:
                    await self._finish(self.ctx)

    async def abandon(self) -> None:
        """The answer could not even start: close the upstream stream and record the call."""
        self.ctx.record.error_class = ErrorClass.CLIENT_DISCONNECTED
        try:
            await close_stream(self._chunks)
        finally:
            try:
                await self._account()
            finally:
                await self._finish(self.ctx)

    async def _relay(self, emit: Emit) -> None:
        """The blocks of one upstream read go out in one write: they are complete at the
        same moment, and a write per event cost more than the rest of its relay. A read's
        blocks are looked at in ``_read`` (not a coroutine), so nothing of the last one (its
        bytes, its decoded chunk) stays referenced while the next read is awaited: an open
        stream holds its state, not its last event."""
        out: list[bytes] = []
        held, self._held = self._held, []
        tally = self._tracker.tally
        span = self.ctx.span
        keep = span.note_stream_event if span is not None and span.captures_content else None
        try:
            going = self._replay(held, out, keep)
            held.clear()  # the first blocks, read before the answer started
            await _flush(emit, out)
            if not going:
                return
            if tally.full:  # counted as it goes, so that none of it is kept
                await self._count_off_loop(tally.take_backlog())
            read = self._read
            async for chunk in self._chunks:
                going = read(chunk, out, keep)
                await _flush(emit, out)
                if not going:
                    return
                if tally.full:
                    await self._count_off_loop(tally.take_backlog())
        finally:
            if out:  # what was ready when the stream ended, broke or stopped
                await _flush(emit, out)

    def _replay(self, held: Held, out: list[bytes], keep: Keep | None) -> bool:
        """Queue the blocks read before the answer started; False when one ends the stream."""
        for raw, seen in held:
            if keep is not None and seen is not None and seen.chunk is not None:
                keep(seen.chunk)  # captureContent: the answer goes on the span
            if not self._forward(out, raw, seen):
                return False
        return True

    def _read(self, chunk: bytes, out: list[bytes], keep: Keep | None) -> bool:
        """Queue one read's blocks on ``out``; False when one ends the stream."""
        tracker = self._tracker
        forward = self._forward
        for raw in self._decoder.feed_raw(chunk):
            event = raw.event
            if event is None:
                seen = None
            else:
                seen = tracker.observe(event.data, event.event)
                if keep is not None and seen.chunk is not None:
                    keep(seen.chunk)  # captureContent: the answer goes on the span
            if not forward(out, raw, seen):
                return False
        return True

    def _forward(self, out: list[bytes], raw: RawEvent, seen: Observation | None) -> bool:
        """Queue one block's bytes on ``out``; False when it ends the stream. (Not a
        coroutine: it runs for every event; the tally is counted by the caller.)"""
        if seen is None:  # keep-alive comment or empty block
            out.append(self._without_key(raw.raw, raw, None))
            return True
        if seen.invalid:
            self._invalid = True
            return False
        if seen.error:
            out.append(self._upstream_error_event(raw, seen))
            return False
        if seen.usage_only and not self._include_usage:
            return True
        block = raw.raw
        if seen.has_usage and (self._include_usage or self._typed) and seen.chunk is not None:
            responses = isinstance(self._tracker, ResponsesStreamTracker)
            messages = isinstance(self._tracker, MessagesStreamTracker)
            amount = self._cost()
            if amount is not None and responses:  # response.completed's usage gains it
                block = with_response_cost(seen.chunk, amount)
            elif amount is not None and messages:  # message_delta's usage gains it
                block = with_message_cost(seen.chunk, amount)
            elif amount is not None:
                block = with_cost(seen.chunk, amount)
        if self.ctx.record.time_to_first_token_ms is None and seen.has_content:
            self.ctx.record.time_to_first_token_ms = self.ctx.elapsed_ms()
        out.append(self._without_key(block, raw, seen.chunk))
        return True

    def _without_key(self, block: bytes, raw: RawEvent, chunk: dict[str, Any] | None) -> bytes:
        """``block`` with the provider key redacted: a search per spelling, rewritten only
        when found. Data with ``\\u`` escapes may spell the key escaped: its decoded chunk,
        re-encoded (msgspec writes ASCII as is), is looked at then. A one-byte search (memchr)
        first: most events hold no backslash."""
        spellings = self._key
        if not spellings:
            return block
        escaped = block.find(b"\\") >= 0 and b"\\u" in block
        if escaped and chunk is not None and block is raw.raw:
            plain = _ENCODER.encode(chunk)
            if spellings[0] in plain:
                name = raw.event.event if raw.event is not None else None
                return encode_event(redact_bytes(plain, spellings), name)
        return redact_bytes(block, spellings)

    def _error_event(self, message: str, code: str) -> bytes:
        """The event the gateway ends a broken stream with: an OpenAI error envelope, on
        /v1/responses the Responses API's ``error`` event, numbered after the last one, on
        /v1/messages Anthropic's ``error`` event."""
        tracker = self._tracker
        if isinstance(tracker, ResponsesStreamTracker):
            return _responses_error(tracker, message, code)
        if isinstance(tracker, MessagesStreamTracker):
            return stream_error_event(message)
        return _error_event(message, code)

    def _upstream_error_event(self, raw: RawEvent, seen: Observation) -> bytes:
        """An upstream's error event as the client gets it, without the provider key."""
        api_key = self.target.provider.api_key
        data = raw.event.data if raw.event is not None else ""
        tracker = self._tracker
        if isinstance(tracker, MessagesStreamTracker):
            if seen.chunk is None:  # an ``event: error`` whose data is not JSON
                return stream_error_event("The upstream stream failed.")
            return encode_event(_ENCODER.encode(redact_json(seen.chunk, api_key)), "error")
        if isinstance(tracker, ResponsesStreamTracker):
            if seen.chunk is None:  # an ``event: error`` whose data is not JSON
                return _responses_error(
                    tracker, message="The upstream stream failed.", code="upstream_error"
                )
            name = raw.event.event if raw.event is not None else None
            redacted = _ENCODER.encode(redact_json(seen.chunk, api_key))
            return encode_event(redacted, name or str(seen.chunk.get("type") or "error"))
        wrapped = stream_error_envelope(seen.chunk, data, api_key)
        return encode_event(_ENCODER.encode(wrapped))

    async def _count_off_loop(self, text: str) -> None:
        """Count generated text in a counting thread, never on the loop."""
        if not text:
            return
        tally = self._tracker.tally
        try:
            counted = await off_loop(
                count_text_bounded, self._counter, text, self.target.model.name
            )
        except asyncio.CancelledError:
            tally.add_bound(text)  # the call ends meanwhile: its size stands in
            raise
        tally.add_counted(counted)

    def _cost(self) -> Decimal | None:
        usage = self._tracker.usage
        if usage is None or not believable(usage, self.ctx.request):
            return None  # no cost of figures not believed: the row holds the estimate
        return cost(usage, self.target.model.price)

    async def _account(self) -> None:
        """The row's usage: as reported, else estimated (awaiting only for large texts)."""
        record = self.ctx.record
        answered = redact_optional(self._tracker.model, self.target.provider.api_key)
        record.response_model = answered or record.response_model
        record.upstream_model = upstream_model(self.target.model.name, answered)
        model = self.target.model
        request = self.ctx.request
        usage = self._tracker.usage
        invalid = usage is not None and not believable(usage, request)
        if usage is not None and not invalid:
            account_reported(record, usage, model)
            if self.ctx.span is not None:
                self.ctx.span.note_cached_tokens(usage.cache_read_tokens)
            return
        if invalid:
            log_invalid_usage(self.ctx.request_id, model.id)
        prompt = known_prompt_tokens(self._counter, request, model.name)
        try:
            if self._tracker.tally.backlog_chars > INLINE_CHARS:
                await self._count_off_loop(self._tracker.tally.take_rest())
            if prompt is None:
                prompt = await prompt_tokens(self._counter, request, model.name)
        except asyncio.CancelledError:
            # Hung up while counting: sizes stand in for what was not counted.
            prompt = prompt or prompt_upper_bound(request)
            output = self._tracker.estimate_output_tokens()
            account_estimated(record, model, prompt, output, invalid=invalid)
            raise
        output = self._tracker.estimate_output_tokens()
        account_estimated(record, model, prompt, output, invalid=invalid)


async def _flush(emit: Emit, out: list[bytes]) -> None:
    if out:
        data = out[0] if len(out) == 1 else b"".join(out)
        out.clear()
        await emit(data)


def _error_event(message: str, code: str) -> bytes:
    """The one shape of every error event the gateway itself ends a stream with."""
    return encode_event(_ENCODER.encode(envelope(None, message, code)))


def _responses_error(tracker: ResponsesStreamTracker, message: str, code: str) -> bytes:
    payload = {
        "type": "error",
        "code": code,
        "message": message,
        "param": None,
        "sequence_number": tracker.next_sequence_number(),
    }
    return encode_event(_ENCODER.encode(payload), "error")
