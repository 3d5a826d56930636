"""StreamRelay: each way a stream ends, what the client reads and what the row records.

The upstream is a list of byte chunks (or an exception raised in their place), opened the
way the pipeline opens one (``open_checked``); the client is the ``emit`` callback.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from decimal import Decimal
from typing import Any

import msgspec
import pytest

from gateway.domain.errors import UpstreamError
from gateway.domain.failures import ErrorClass, FailureKind
from gateway.domain.model import (
    AdapterType,
    Configuration,
    ConfigurationMode,
    Endpoint,
    Model,
    Price,
    Provider,
)
from gateway.domain.usage import UsageSource
from gateway.inbound import parse_inbound
from gateway.pipeline.context import CallContext, Target
from gateway.pipeline.stream import StreamRelay
from gateway.pipeline.stream_open import counting_tracker, open_checked
from gateway.usage.tokens import CharEstimateCounter

KEY = "sk-test-provider-secret-0042"
COUNTER = CharEstimateCounter()
Chunk = bytes | BaseException


def _data(payload: dict[str, Any] | str) -> bytes:
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return f"data: {text}\n\n".encode()


def _delta(content: str, finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": {"content": content}, "finish_reason": finish}
    return _data({"id": "c1", "model": "gpt-4o-mini", "choices": [choice]})


USAGE = _data(
    {"id": "c1", "model": "gpt-4o-mini", "choices": [], "usage": {
        "prompt_tokens": 1000, "completion_tokens": 2000, "total_tokens": 3000}}
)  # fmt: skip
DONE = b"data: [DONE]\n\n"


class Upstream:
    def __init__(self, chunks: list[Chunk]) -> None:
        self._chunks = chunks
        self.closed = False

    async def stream(self) -> AsyncIterator[bytes]:
        try:
            for chunk in self._chunks:
                if isinstance(chunk, BaseException):
                    raise chunk
                yield chunk
        finally:
            self.closed = True


class Client:
    def __init__(self, hang_up_after: int | None = None) -> None:
        self.received: list[bytes] = []
        self._hang_up_after = hang_up_after

    async def emit(self, data: bytes) -> None:
        if self._hang_up_after is not None and len(self.received) >= self._hang_up_after:
            raise asyncio.CancelledError  # as the server's send does once the client left
        self.received.append(data)

    def events(self) -> list[str]:
        text = b"".join(self.received).decode()
        return [block.removeprefix("data: ") for block in text.split("\n\n") if block]


async def _relay(
    chunks: list[Chunk], *, include_usage: bool = False, api_key: str = KEY
) -> tuple[StreamRelay, Upstream, list[CallContext]]:
    body: dict[str, Any] = {"model": "chat", "stream": True, "messages": [{"role": "user"}]}
    if include_usage:
        body["stream_options"] = {"include_usage": True}
    request = parse_inbound(Endpoint.CHAT, msgspec.json.encode(body))
    ctx = CallContext(request, None, "call-1", time.monotonic() + 60)
    price = Price(input=Decimal("1"), output=Decimal("2"))
    model = Model(id="m", provider="p", name="gpt-4o-mini", price=price)
    provider = Provider(id="p", adapter=AdapterType.OPENAI, base_url="http://x", api_key=api_key)
    configuration = Configuration(id="chat", mode=ConfigurationMode.FIXED, model="m")
    upstream = Upstream(chunks)
    tracker = counting_tracker(COUNTER, model.name)
    opened = await open_checked(upstream.stream(), tracker, 1024)
    finished: list[CallContext] = []

    async def finish(ended: CallContext) -> None:
        finished.append(ended)

    relay = StreamRelay(ctx, Target(configuration, model, provider, None), opened, COUNTER, finish)
    return relay, upstream, finished


def _error_of(event: str) -> dict[str, Any]:
    error: dict[str, Any] = json.loads(event)["error"]
    return error


async def test_a_whole_stream_is_relayed_byte_identical_and_recorded() -> None:
    chunks: list[Chunk] = [_delta("Hel"), _delta("lo", finish="stop"), USAGE, DONE]
    relay, upstream, finished = await _relay(chunks)
    client = Client()
    await relay.run(client.emit)
    # The usage chunk the gateway asked for is not the client's: it is left out.
    assert b"".join(client.received) == _delta("Hel") + _delta("lo", finish="stop") + DONE
    record = relay.ctx.record
    assert record.success and record.error_class is None and record.http_status == 200
    assert record.usage_source is UsageSource.PROVIDER
    assert (record.actual_input_tokens, record.actual_output_tokens) == (1000, 2000)
    assert record.actual_cost == Decimal("0.005")
    assert record.response_model == "gpt-4o-mini"
    assert record.time_to_first_token_ms is not None
    assert upstream.closed and finished == [relay.ctx]


async def test_a_client_that_asked_for_usage_gets_it_with_its_cost() -> None:
    relay, _, _ = await _relay([_delta("Hi", finish="stop"), USAGE, DONE], include_usage=True)
    client = Client()
    await relay.run(client.emit)
    usage = json.loads(client.events()[1])["usage"]
    assert usage["prompt_tokens"] == 1000 and usage["cost"] == 0.005


async def test_without_reported_usage_the_row_is_estimated() -> None:
    relay, _, _ = await _relay([_delta("a" * 40, finish="stop"), DONE])
    await relay.run(Client().emit)
    record = relay.ctx.record
    assert record.success and record.usage_source is UsageSource.ESTIMATED
    assert record.estimated_output_tokens == 10  # 40 characters / 4


async def test_an_upstream_error_event_ends_the_stream_without_the_key() -> None:
    error = {"error": {"message": f"boom for {KEY}", "type": "server_error", "code": None}}
    relay, upstream, finished = await _relay([_delta("Hi"), _data(error), _delta("never")])
    client = Client()
    await relay.run(client.emit)
    events = client.events()
    assert len(events) == 2 and "[DONE]" not in events
    relayed = _error_of(events[-1])
    assert KEY not in json.dumps(relayed) and "[redacted]" in relayed["message"]
    assert relay.ctx.record.error_class is ErrorClass.UPSTREAM_5XX
    assert not relay.ctx.record.success
    assert upstream.closed and finished == [relay.ctx]


async def test_an_event_that_is_not_json_ends_the_stream_as_invalid() -> None:
    relay, _, _ = await _relay([_delta("Hi"), _data("{not json"), _delta("never")])
    client = Client()
    await relay.run(client.emit)
    error = _error_of(client.events()[-1])
    assert (error["code"], error["type"]) == ("invalid_upstream_response", "api_error")
    assert relay.ctx.record.error_class is ErrorClass.INVALID_UPSTREAM_RESPONSE


async def test_a_stream_that_ends_early_is_cut() -> None:
    relay, _, _ = await _relay([_delta("Hi"), _delta(" there")])
    client = Client()
    await relay.run(client.emit)
    error = _error_of(client.events()[-1])
    assert error["code"] == "stream_cut"
    assert error["message"] == "The upstream stream ended before it was complete."
    assert relay.ctx.record.error_class is ErrorClass.STREAM_CUT


async def test_a_stream_that_breaks_is_cut_with_the_reason() -> None:
    broke = UpstreamError(FailureKind.STREAM_CUT, "upstream stream broke: ReadError")
    relay, upstream, _ = await _relay([_delta("Hi"), broke])
    client = Client()
    await relay.run(client.emit)
    error = _error_of(client.events()[-1])
    assert error["code"] == "stream_cut"
    assert error["message"] == "The upstream stream broke: upstream stream broke: ReadError"
    assert relay.ctx.record.error_class is ErrorClass.STREAM_CUT
    assert upstream.closed


async def test_an_event_past_the_cap_ends_the_stream_and_is_read_no_further() -> None:
    relay, _, _ = await _relay([_delta("Hi"), _delta("x" * 4096), _delta("never")])
    client = Client()
    await relay.run(client.emit)
    error = _error_of(client.events()[-1])
    assert error["code"] == "invalid_upstream_response"
    assert "larger than 1024 bytes" in error["message"]
    assert relay.ctx.record.error_class is ErrorClass.INVALID_UPSTREAM_RESPONSE


async def test_a_client_that_hangs_up_mid_stream_is_recorded_as_such() -> None:
    relay, upstream, finished = await _relay([_delta("a"), _delta("b"), _delta("c"), DONE])
    with pytest.raises(asyncio.CancelledError):
        await relay.run(Client(hang_up_after=1).emit)
    record = relay.ctx.record
    assert record.error_class is ErrorClass.CLIENT_DISCONNECTED and not record.success
    assert record.usage_source is UsageSource.ESTIMATED  # what was generated is still billed
    assert upstream.closed and finished == [relay.ctx]


async def test_a_hang_up_after_the_whole_answer_is_a_success() -> None:
    relay, _, _ = await _relay([_delta("a", finish="stop"), USAGE, DONE])
    with pytest.raises(asyncio.CancelledError):
        await relay.run(Client(hang_up_after=1).emit)  # [DONE] never reached the client
    assert relay.ctx.record.success and relay.ctx.record.error_class is None


async def test_an_answer_that_cannot_start_closes_the_upstream_and_records_the_call() -> None:
    relay, upstream, finished = await _relay([_delta("a", finish="stop"), DONE])
    await relay.abandon()
    assert relay.ctx.record.error_class is ErrorClass.CLIENT_DISCONNECTED
    assert upstream.closed and finished == [relay.ctx]


def _echo(content: str, model: str) -> bytes:
    choice = {"index": 0, "delta": {"content": content}, "finish_reason": None}
    return _data({"id": "c1", "model": model, "choices": [choice]})


async def test_the_provider_key_split_across_reads_is_redacted_in_each_event() -> None:
    echoed = _echo(f"key {KEY}.", f"gpt-{KEY}")
    cut = echoed.index(KEY.encode()) + 5  # the first read ends inside the key
    chunks: list[Chunk] = [echoed[:cut], echoed[cut:], _delta("ok", finish="stop"), DONE]
    relay, _, _ = await _relay(chunks)
    client = Client()
    await relay.run(client.emit)
    sent = b"".join(client.received)
    assert KEY.encode() not in sent
    assert sent == _echo("key [redacted].", "gpt-[redacted]") + _delta("ok", "stop") + DONE
    record = relay.ctx.record
    assert record.success and record.response_model == "gpt-[redacted]"
    assert record.upstream_model == "gpt-[redacted]"


async def test_a_usage_chunk_given_its_cost_and_a_comment_are_redacted_too() -> None:
    usage = {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}
    last = _data({"id": "c1", "model": KEY, "choices": [], "usage": usage})
    chunks: list[Chunk] = [f": ping {KEY}\n\n".encode(), _delta("Hi", "stop"), last, DONE]
    relay, _, _ = await _relay(chunks, include_usage=True)
    client = Client()
    await relay.run(client.emit)
    sent = b"".join(client.received).decode()
    assert KEY not in sent and sent.startswith(": ping [redacted]\n\n")
    assert json.loads(client.events()[-2])["usage"]["cost"] == 0.000005


@pytest.mark.parametrize(
    ("api_key", "spelt"),
    [
        (KEY, "\\u0073" + KEY[1:]),  # an escaped first letter
        ("sk-a/b/c-secret", "sk-a\\/b\\/c-secret"),  # JSON's optional escape of "/"
        ("sk-a/b/c-secret", "\\u0073k-a\\/b\\/c-secret"),
    ],
)
async def test_a_key_spelt_with_json_escapes_is_redacted(api_key: str, spelt: str) -> None:
    raw = _echo("KEY", "gpt-4o-mini").replace(b"KEY", spelt.encode())
    relay, _, _ = await _relay([raw, _delta("", "stop"), DONE], api_key=api_key)
    client = Client()
    await relay.run(client.emit)
    sent = b"".join(client.received).decode()
    assert api_key.removeprefix("sk-") not in sent and spelt not in sent
    assert json.loads(client.events()[0])["choices"][0]["delta"]["content"] == "[redacted]"
