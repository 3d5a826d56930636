"""What a row measures beyond its latency (docs/telemetry.md#telemetry), set when the call ends.

- ``time_to_first_token_ms``: a stream's is taken as its first text event is relayed;
  a whole answer's is its ``latency_ms`` (the first token arrives with the last).
- ``output_tokens_per_second``: streams only, the output tokens (reported, else the
  gateway's estimate) over the generation time from the first token to the end.
- ``upstream_model``: the answer's ``model`` when it is not the name the gateway sent.
"""

from __future__ import annotations

from gateway.telemetry.records import TelemetryRecord


def finish_measures(record: TelemetryRecord, *, streamed: bool) -> None:
    """Fill the derived measures of a row whose ``latency_ms`` is final."""
    if not streamed:
        if record.success and record.time_to_first_token_ms is None:
            record.time_to_first_token_ms = record.latency_ms
        return
    record.output_tokens_per_second = tokens_per_second(
        record.actual_output_tokens
        if record.actual_output_tokens is not None
        else record.estimated_output_tokens,
        record.latency_ms,
        record.time_to_first_token_ms,
    )


def tokens_per_second(
    output_tokens: int | None, latency_ms: float, first_token_ms: float | None
) -> float | None:
    """Output tokens over the time from the first token to the end; None without both."""
    if not output_tokens or first_token_ms is None:
        return None
    generating_ms = latency_ms - first_token_ms
    if generating_ms <= 0:
        return None
    return output_tokens * 1000.0 / generating_ms


def upstream_model(sent: str, answered: str | None) -> str | None:
    """The model the upstream says it ran, when that is not the one it was sent."""
    if answered is None or answered == sent:
        return None
    return answered
