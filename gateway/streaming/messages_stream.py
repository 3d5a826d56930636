"""Watching an Anthropic Messages stream go by (pure, no I/O): ``/v1/messages`` with
``stream: true``, native or translated from chat.

The same duties as ``StreamUsageTracker`` for chat, read from Anthropic's events: the
model and usage of ``message_start``, the usage and ``stop_reason`` of ``message_delta``
(its counts restate the earlier ones cumulatively), ``message_stop`` ends the stream; an
``error`` event is an error; the text of ``text_delta``, ``thinking_delta`` and
``input_json_delta`` is counted as it goes by (for an estimate when no usage comes).
Usage whose input and output are both 0 counts as not reported: a translated stream
whose upstream reported none says 0 (the fields are required), and no real call reads
and writes nothing. ``with_message_cost`` adds the call's cost to ``message_delta``'s
usage.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import msgspec

from gateway.domain.usage import Usage
from gateway.pricing import usd_json_number
from gateway.streaming.openai_stream import Observation, StreamUsageTracker
from gateway.streaming.sse import encode_event

_decoder = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder()
_INVALID = Observation(invalid=True)
_OPAQUE_ERROR = Observation(error=True)
# The delta field holding generated (billed) text, by delta type.
_TEXT_FIELDS = {
    "text_delta": "text",
    "thinking_delta": "thinking",
    "input_json_delta": "partial_json",
}
_USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)


class MessagesStreamTracker(StreamUsageTracker):
    __slots__ = ("_counts",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._counts: dict[str, int] = {}

    def observe(self, data: str, event: str | None = None) -> Observation:
        try:
            chunk = _decoder.decode(data)
        except (msgspec.DecodeError, RecursionError):
            chunk = None
        if not isinstance(chunk, dict):
            if event == "error":
                self.error = data
                return _OPAQUE_ERROR
            return _INVALID
        kind = chunk.get("type")
        kind = kind if isinstance(kind, str) else event
        if kind == "error" or event == "error":
            self.error = chunk
            return Observation(error=True, chunk=chunk)
        if kind == "message_start":
            message = chunk.get("message")
            if isinstance(message, dict):
                model = message.get("model")
                if self.model is None and isinstance(model, str) and model:
                    self.model = model
                self._merge(message.get("usage"))
            return Observation(chunk=chunk)
        if kind == "message_delta":
            delta = chunk.get("delta")
            reason = delta.get("stop_reason") if isinstance(delta, dict) else None
            if isinstance(reason, str):
                self.finish_reason = reason
            self._merge(chunk.get("usage"))
            return Observation(has_usage=self.usage is not None, chunk=chunk)
        if kind == "message_stop":
            self.done = True
            return Observation(chunk=chunk)
        if kind == "content_block_delta":
            delta = chunk.get("delta")
            seen = False
            if isinstance(delta, dict):
                name = _TEXT_FIELDS.get(str(delta.get("type")))
                seen = name is not None and self._keep(delta.get(name))
            return Observation(has_content=seen, chunk=chunk)
        return Observation(chunk=chunk)

    def _merge(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            return
        for name in _USAGE_FIELDS:
            value = usage.get(name)
            if isinstance(value, int) and not isinstance(value, bool):
                self._counts[name] = value
        self.usage = usage_of(self._counts)


def usage_of(counts: dict[str, int]) -> Usage | None:
    """Anthropic's counts as a Usage (its input_tokens exclude cache reads and writes;
    Usage counts them in); None when nothing was read or written (see the module doc)."""
    read = counts.get("cache_read_input_tokens", 0)
    write = counts.get("cache_creation_input_tokens", 0)
    usage = Usage(
        input_tokens=counts.get("input_tokens", 0) + read + write,
        output_tokens=counts.get("output_tokens", 0),
        cache_read_tokens=read,
        cache_write_tokens=write,
    )
    if usage.input_tokens == 0 and usage.output_tokens == 0:
        return None
    return usage


def with_message_cost(event: dict[str, Any], cost: Decimal) -> bytes:
    """A ``message_delta`` event re-encoded as one SSE event, its ``usage`` gaining
    ``cost`` (an exact plain JSON number)."""
    out = dict(event)
    usage = out.get("usage")
    if isinstance(usage, dict):
        out["usage"] = {**usage, "cost": usd_json_number(cost)}
    return encode_event(_encoder.encode(out), "message_delta")
