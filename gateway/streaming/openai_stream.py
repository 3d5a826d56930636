"""Watching an OpenAI-compatible chat/completions stream go by (pure, no I/O).

``StreamUsageTracker.observe`` looks at one SSE event's data and says what the
relay must do with it (the ``[DONE]`` sentinel, a usage-only chunk to strip
unless the client asked for usage, an error) while it accumulates what the call
record needs: the upstream's usage, the response ``model``, the finish reason
and the generated text's tokens (to estimate output tokens when no usage came),
counted as the text goes by: no stream keeps its text, so its memory does not
grow with the answer (see ``TokenTally``).
Data that is not a JSON object (nor ``[DONE]``) is invalid: a client's SDK would
choke on it, so the relay must not pass it on. A JSON object of an unexpected shape
is opaque: observed, never fatal.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any, NamedTuple

import msgspec

from gateway.domain.usage import TokenCount, Usage
from gateway.pricing import usd_json_number
from gateway.streaming.sse import encode_event
from gateway.usage.openai_usage import usage_from_openai
from gateway.usage.tally import TokenTally
from gateway.usage.tokens import CharEstimateCounter

DONE_SENTINEL = "[DONE]"

_decoder = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder()


class Observation(NamedTuple):
    """What one event is, for the relay (a tuple: made for every event of every stream,
    and a frozen dataclass's ``__init__`` cost about as much as decoding the event)."""

    done: bool = False  # the [DONE] sentinel
    # ``choices`` empty (or absent) and ``usage`` present: the chunk the gateway asked
    # for with include_usage; strip it unless the client asked too.
    usage_only: bool = False
    error: bool = False  # an error event (``{"error": ...}`` or ``event: error``)
    invalid: bool = False  # data that is not a JSON object (and not an ``error`` event)
    has_usage: bool = False  # carries a readable ``usage``
    has_content: bool = False  # carries generated text (the first one marks TTFT)
    chunk: dict[str, Any] | None = None  # the decoded JSON object, when it is one


_INVALID = Observation(invalid=True)
_OPAQUE_ERROR = Observation(error=True)
_DONE = Observation(done=True)


class StreamUsageTracker:
    """Feed it every event's data, in order; read the totals at the end."""

    __slots__ = ("done", "error", "finish_reason", "model", "tally", "usage")

    def __init__(self, tally: TokenTally | None = None) -> None:
        """``tally`` counts the generated text; characters/4 when none is given."""
        self.usage: Usage | None = None  # the last usage reported (they are cumulative)
        self.model: str | None = None  # the first non-empty ``model`` seen
        self.finish_reason: str | None = None  # the last one seen
        self.done = False
        self.error: Any = None  # the payload of the last error event
        self.tally = tally or TokenTally(_chars_over_four)

    def estimate_output_tokens(self) -> TokenCount:
        """The generated text's tokens (what is still pending counted now)."""
        return TokenCount(self.tally.total(), self.tally.upper_bound)

    def observe(self, data: str, event: str | None = None) -> Observation:
        """Classify one event's data (``event`` is its SSE event name, if any)."""
        is_error_event = event == "error"
        if data.strip() == DONE_SENTINEL:
            self.done = True
            return _DONE
        try:
            chunk = _decoder.decode(data)
        except (msgspec.DecodeError, RecursionError):  # nesting deeper than msgspec goes
            chunk = None
        if not isinstance(chunk, dict):
            if is_error_event:
                self.error = data
                return _OPAQUE_ERROR
            return _INVALID
        return self._observe_chunk(chunk, is_error_event)

    def _observe_chunk(self, chunk: dict[str, Any], is_error_event: bool) -> Observation:
        error = chunk.get("error")
        is_error = is_error_event or error is not None
        if is_error:
            self.error = error if error is not None else chunk
        model = chunk.get("model")
        if self.model is None and isinstance(model, str) and model:
            self.model = model
        raw_usage = chunk.get("usage")  # absent from all but the last chunk
        usage = None if raw_usage is None else usage_from_openai(raw_usage)
        if usage is not None:
            self.usage = usage
        choices = chunk.get("choices")
        has_content = self._observe_choices(choices) if isinstance(choices, list) else False
        if usage is None and not is_error:  # most events: text, a finish reason
            return Observation(False, False, False, False, False, has_content, chunk)
        return Observation(
            usage_only=usage is not None and not choices and not is_error,
            error=is_error,
            has_usage=usage is not None,
            has_content=has_content,
            chunk=chunk,
        )

    def _observe_choices(self, choices: list[Any]) -> bool:
        seen = False
        for choice in choices:
            if not isinstance(choice, dict):
                continue
            finish = choice.get("finish_reason")
            if isinstance(finish, str):
                self.finish_reason = finish
            seen = self._keep(choice.get("text")) or seen  # completions
            delta = choice.get("delta")
            if isinstance(delta, dict):
                seen = self._observe_delta(delta) or seen
        return seen

    def _observe_delta(self, delta: dict[str, Any]) -> bool:
        seen = self._keep(delta.get("content"))
        # Reasoning models stream their (billed) reasoning under these names.
        seen = self._keep(delta.get("reasoning_content")) or seen
        seen = self._keep(delta.get("reasoning")) or seen
        tool_calls = delta.get("tool_calls")
        legacy = delta.get("function_call")  # the legacy single-call form
        if tool_calls is None and legacy is None:
            return seen
        functions = [legacy]
        if isinstance(tool_calls, list):
            functions += [call.get("function") for call in tool_calls if isinstance(call, dict)]
        for function in functions:
            if isinstance(function, dict):
                seen = self._keep(function.get("name")) or seen
                seen = self._keep(function.get("arguments")) or seen
        return seen

    def _keep(self, value: Any) -> bool:
        if isinstance(value, str) and value:
            self.tally.add(value)
            return True
        return False


_CHARS = CharEstimateCounter()


def _chars_over_four(text: str) -> int:
    return _CHARS.count_text(text, "")


def with_cost(chunk_json: Mapping[str, Any], cost: Decimal) -> bytes:
    """The usage chunk re-encoded as one SSE event, its ``usage`` gaining ``cost``.

    ``cost`` is written as an exact plain JSON number (see ``usd_json_number``).
    A chunk without a ``usage`` object is re-encoded unchanged.
    """
    out = dict(chunk_json)
    usage = out.get("usage")
    if isinstance(usage, Mapping):
        out["usage"] = {**usage, "cost": usd_json_number(cost)}
    return encode_event(_encoder.encode(out))
