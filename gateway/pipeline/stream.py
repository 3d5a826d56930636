"""The streaming dispatcher: relay upstream SSE events as they arrive, capture usage.

Each upstream event goes out byte-identical as soon as it is complete, except the
usage chunk the gateway asked for (stripped unless the client asked for it too,
and then carrying ``cost``). A failure after the first byte ends the stream with
an SSE error event and no ``[DONE]``; so does an event larger than
``server.maxUpstreamEventBytes`` (read no further). A client disconnect closes
the upstream stream. Either way the call's row is recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from decimal import Decimal
from typing import Any

import msgspec

from gateway.pipeline.accounting import account_estimated, account_reported
from gateway.pipeline.context import CallContext, Target
from gateway.pricing import cost
from gateway.streaming.openai_stream import StreamUsageTracker, with_cost
from gateway.streaming.sse import EventTooLarge, SSEDecoder, encode_event
from gateway.upstream.base import UpstreamError
from gateway.usage.estimate import (
    INLINE_CHARS,
    count_text_bounded,
    known_prompt_tokens,
    off_loop,
    prompt_tokens,
    prompt_upper_bound,
)
from gateway.usage.tally import TokenTally
from gateway.usage.tokens import TokenCounter

Emit = Callable[[bytes], Awaitable[None]]
_ENCODER = msgspec.json.Encoder()
INVALID = "invalid_upstream_response"


class StreamRelay:
    def __init__(
        self,
        ctx: CallContext,
        target: Target,
        chunks: AsyncIterator[bytes],
        counter: TokenCounter,
        finish: Callable[[CallContext], Awaitable[None]],
        *,
        max_event_bytes: int,
    ) -> None:
        self.ctx = ctx
        self.target = target
        self._chunks = chunks
        self._counter = counter
        self._finish = finish
        self._max_event_bytes = max_event_bytes
        name = target.model.name
        self._tracker = StreamUsageTracker(TokenTally(lambda text: counter.count_text(text, name)))

    async def run(self, emit: Emit) -> None:
        record = self.ctx.record
        record.http_status = 200
        try:
            await self._relay(emit)
            if self._tracker.error is not None:
                record.error_class = "upstream_5xx"
            elif not (self._tracker.done or self._tracker.finish_reason):
                record.error_class = "stream_cut"
                await emit(_error_event("The upstream stream ended before it was complete."))
            else:
                record.success = True
        except EventTooLarge as error:
            record.error_class = INVALID
            message = f"The upstream sent a stream event larger than {error.limit} bytes."
            await emit(_error_event(message, INVALID))
        except UpstreamError as error:
            oversize = error.kind == "oversize"
            record.error_class = INVALID if oversize else "stream_cut"
            message = f"The upstream stream broke: {error.message}"
            await emit(_error_event(message, INVALID if oversize else "stream_cut"))
        except (asyncio.CancelledError, GeneratorExit):
            if self._tracker.done:  # the client hung up after the whole answer: a success
                record.success = True
            else:
                record.error_class = "client_disconnected"
            raise
        finally:
            try:
                await _close(self._chunks)
            finally:
                # Even when a cancellation lands while closing: the row is recorded (end()
                # does that before its first await) and the budget hold settled.
                try:
                    await self._account()
                finally:
                    await self._finish(self.ctx)

    async def abandon(self) -> None:
        """The answer could not even start: close the upstream stream and record the call."""
        self.ctx.record.error_class = "client_disconnected"
        try:
            await _close(self._chunks)
        finally:
            try:
                await self._account()
            finally:
                await self._finish(self.ctx)

    async def _relay(self, emit: Emit) -> None:
        decoder = SSEDecoder(self._max_event_bytes)
        tracker = self._tracker
        include_usage = self.ctx.request.include_usage
        async for chunk in self._chunks:
            for event in decoder.feed_raw(chunk):
                if event.event is None:  # keep-alive comment or empty block
                    await emit(event.raw)
                    continue
                seen = tracker.observe(event.event.data, event.event.event)
                if tracker.tally.full:  # counted as it goes, so that none of it is kept
                    await self._count_off_loop(tracker.tally.take_backlog())
                if seen.usage_only and not include_usage:
                    continue
                out = event.raw
                if seen.has_usage and include_usage and seen.chunk is not None:
                    amount = self._cost()
                    if amount is not None:
                        out = with_cost(seen.chunk, amount)
                if self.ctx.record.time_to_first_token_ms is None and seen.has_content:
                    self.ctx.record.time_to_first_token_ms = self.ctx.elapsed_ms()
                await emit(out)

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
        if usage is None:
            return None
        return cost(usage, self.target.model.price)

    async def _account(self) -> None:
        """The row's usage: as reported, else estimated (awaiting only for large texts)."""
        record = self.ctx.record
        record.response_model = self._tracker.model or record.response_model
        model = self.target.model
        if self._tracker.usage is not None:
            account_reported(record, self._tracker.usage, model)
            return
        request = self.ctx.request
        prompt = known_prompt_tokens(self._counter, request, model.name)
        try:
            if self._tracker.tally.backlog_chars > INLINE_CHARS:
                await self._count_off_loop(self._tracker.tally.take_rest())
            if prompt is None:
                prompt = await prompt_tokens(self._counter, request, model.name)
        except asyncio.CancelledError:
            # Hung up while counting: sizes stand in for what was not counted.
            prompt = prompt or prompt_upper_bound(request)
            account_estimated(record, model, prompt, self._tracker.estimate_output_tokens())
            raise
        account_estimated(record, model, prompt, self._tracker.estimate_output_tokens())


def _error_event(message: str, code: str = "stream_cut") -> bytes:
    payload: dict[str, Any] = {
        "error": {"message": message, "type": "api_error", "param": None, "code": code}
    }
    return encode_event(_ENCODER.encode(payload))


async def _close(chunks: AsyncIterator[bytes]) -> None:
    aclose = getattr(chunks, "aclose", None)
    if aclose is None:
        return
    # Closing a broken upstream must not mask the call's outcome.
    with contextlib.suppress(Exception):
        await aclose()
