"""Watching a Responses API stream go by (pure, no I/O): ``/v1/responses`` with
``stream: true``, native or translated from chat.

The same duties as ``StreamUsageTracker`` for chat, read from typed events: the usage
and model of ``response.completed`` (or ``response.incomplete``), which also ends the
stream; ``error`` and ``response.failed`` events are errors; the text of the
``*.delta`` events is counted as it goes by (for an estimate when no usage comes).
The last ``sequence_number`` seen lets the gateway number an error event of its own;
``with_response_cost`` adds the call's cost to the usage of the last event.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import msgspec

from gateway.pricing import usd_json_number
from gateway.streaming.openai_stream import Observation, StreamUsageTracker
from gateway.streaming.sse import encode_event
from gateway.usage.openai_usage import usage_from_responses

_decoder = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder()
_INVALID = Observation(invalid=True)
_OPAQUE_ERROR = Observation(error=True)
# Events whose ``delta`` is generated text (billed output).
_TEXT_DELTAS = frozenset(
    {
        "response.output_text.delta",
        "response.refusal.delta",
        "response.function_call_arguments.delta",
        "response.reasoning_text.delta",
        "response.reasoning_summary_text.delta",
        "response.custom_tool_call_input.delta",
    }
)
_ENDS = frozenset({"response.completed", "response.incomplete"})
_ERRORS = frozenset({"error", "response.failed"})


class ResponsesStreamTracker(StreamUsageTracker):
    __slots__ = ("sequence_number",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sequence_number = -1  # the last one seen

    def next_sequence_number(self) -> int:
        return self.sequence_number + 1

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
        number = chunk.get("sequence_number")
        if isinstance(number, int) and not isinstance(number, bool):
            self.sequence_number = number
        response = chunk.get("response")
        if isinstance(response, dict):
            model = response.get("model")
            if self.model is None and isinstance(model, str) and model:
                self.model = model
        if kind in _ERRORS or event == "error":
            self.error = chunk
            return Observation(error=True, chunk=chunk)
        if kind in _ENDS and isinstance(response, dict):
            self.done = True
            status = response.get("status")
            self.finish_reason = status if isinstance(status, str) else "completed"
            usage = usage_from_responses(response.get("usage"))
            if usage is not None:
                self.usage = usage
            return Observation(has_usage=usage is not None, chunk=chunk)
        seen = False
        if kind in _TEXT_DELTAS:
            seen = self._keep(chunk.get("delta"))
        return Observation(has_content=seen, chunk=chunk)


def with_response_cost(event: dict[str, Any], cost: Decimal) -> bytes:
    """A ``response.completed`` (or ``response.incomplete``) event re-encoded as one SSE
    event, its ``response.usage`` gaining ``cost`` (an exact plain JSON number)."""
    response = event.get("response")
    usage = response.get("usage") if isinstance(response, dict) else None
    out = dict(event)
    if isinstance(response, dict) and isinstance(usage, dict):
        out["response"] = {**response, "usage": {**usage, "cost": usd_json_number(cost)}}
    kind = out.get("type")
    return encode_event(_encoder.encode(out), kind if isinstance(kind, str) else None)
