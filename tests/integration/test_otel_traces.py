"""telemetry.otel end to end: a real OTLP receiver on loopback gets one server span per call
and one client span per upstream attempt, on the GenAI conventions, joined to the client's
trace; the collector away costs the calls nothing."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import ADMIN_KEY, TEST_KEY, RunningGateway, gateway_yaml, running_gateway
from tests.support.otlp import GrpcReceiver, HttpReceiver, ReceivedSpan
from tests.support.process import free_port, serving

SERVER, CLIENT = 2, 3  # OTLP span kinds
CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"
MESSAGES: list[Any] = [{"role": "user", "content": "Say hi."}]
CONFIGURATIONS = """  - {id: flaky, mode: fixed, model: hasty, fallback: [chat]}
  - {id: cached, mode: fixed, model: small, cache: {ttlSeconds: 60}}
  - {id: once, mode: fixed, model: small, budget: {daily: {requests: 1}}}
  - {id: limited, mode: fixed, model: small, rateLimit: {requestsPerMinute: 1}}"""


def _yaml(upstream: FakeUpstream, sqlite_url: str, otel: str) -> str:
    return gateway_yaml(
        upstream.url,
        sqlite_url,
        configurations=CONFIGURATIONS,
        extra=f"telemetry: {{otel: {{enabled: true, {otel}}}}}",
    )


@pytest.fixture
def receiver() -> Iterator[HttpReceiver]:
    collector = HttpReceiver()
    yield collector
    collector.close()


@pytest.fixture
def gateway(
    upstream: FakeUpstream, sqlite_url: str, receiver: HttpReceiver
) -> Iterator[RunningGateway]:
    otel = f'endpoint: "{receiver.url}", serviceName: gw-test, traceUrl: "http://t/{{traceId}}"'
    with running_gateway(_yaml(upstream, sqlite_url, otel)) as running:
        yield running


def _spans(receiver: HttpReceiver, trace_id: str, count: int) -> list[ReceivedSpan]:
    """The trace's spans once ``count`` have come (the export runs once a second), or
    after 10 s what has come."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        spans = receiver.of_trace(trace_id)
        if len(spans) >= count:
            return spans
        time.sleep(0.05)
    return receiver.of_trace(trace_id)


def _sent_headers(upstream: FakeUpstream) -> dict[str, str]:
    return {name.lower(): value for name, value in upstream.received[-1].headers.items()}


def _server(spans: list[ReceivedSpan]) -> ReceivedSpan:
    (server,) = [span for span in spans if span.kind == SERVER]
    return server


def _clients(spans: list[ReceivedSpan]) -> list[ReceivedSpan]:
    return sorted((s for s in spans if s.kind == CLIENT), key=lambda s: s.start_ns)


def test_a_call_continues_the_clients_trace_with_genai_attributes_and_reaches_the_upstream(
    gateway: RunningGateway, upstream: FakeUpstream, receiver: HttpReceiver
) -> None:
    client = gateway.client(default_headers={"traceparent": TRACEPARENT})
    raw = client.chat.completions.with_raw_response.create(
        model="chat", messages=MESSAGES, max_tokens=50, temperature=0.5
    )
    assert raw.headers["x-gateway-trace-id"] == CLIENT_TRACE
    spans = _spans(receiver, CLIENT_TRACE, 2)
    server = _server(spans)
    assert server.name == "chat chat" and server.parent_span_id == CLIENT_SPAN
    assert server.service_name == "gw-test"
    attributes = server.attributes
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.provider.name"] == "openai"
    assert attributes["gen_ai.request.model"] == "chat"
    assert attributes["gen_ai.response.model"] == "small-model-2026-01-01"
    assert (attributes["gen_ai.usage.input_tokens"], attributes["gen_ai.usage.output_tokens"]) == (
        12,
        7,
    )
    assert attributes["gen_ai.request.max_tokens"] == 50
    assert attributes["gen_ai.request.temperature"] == 0.5
    assert attributes["gen_ai.response.finish_reasons"] == ["stop"]
    assert attributes["gen_ai.response.id"] == raw.parse().id
    assert attributes["gateway.key_id"] == "alice"
    assert attributes["gateway.routing.policy_mode"] == "fixed"
    (row,) = gateway.rows(expect=1)
    assert attributes["gateway.cost_usd"] == pytest.approx(float(row["actual_cost"]))
    assert row["trace_id"] == CLIENT_TRACE
    admin = {"authorization": f"Bearer {ADMIN_KEY}"}
    detail = httpx.get(f"{gateway.url}/admin/api/calls/{row['id']}", headers=admin).json()
    assert (detail["traceId"], detail["traceUrl"]) == (CLIENT_TRACE, f"http://t/{CLIENT_TRACE}")
    page = httpx.get(f"{gateway.url}/admin/calls/{row['id']}", headers=admin).text
    assert f'<a href="http://t/{CLIENT_TRACE}"><code>{CLIENT_TRACE}</code></a>' in page
    assert "error.type" not in attributes
    assert not any(TEST_KEY in str(value) for value in attributes.values())

    (attempt,) = _clients(spans)
    assert attempt.parent_span_id == server.span_id
    assert attempt.attributes["server.address"] == "127.0.0.1"
    assert attempt.attributes["gateway.retry"] == 0
    assert attempt.attributes["http.response.status_code"] == 200
    sent = _sent_headers(upstream)["traceparent"]
    assert sent == f"00-{CLIENT_TRACE}-{attempt.span_id}-01"


def test_a_stream_span_has_its_first_token_and_its_usage(
    gateway: RunningGateway, receiver: HttpReceiver
) -> None:
    client = gateway.client()
    with client.chat.completions.with_streaming_response.create(
        model="chat", messages=MESSAGES, stream=True
    ) as response:
        trace_id = response.headers["x-gateway-trace-id"]
        assert len(list(response.iter_lines())) > 2
    server = _server(_spans(receiver, trace_id, 2))
    (first,) = [event for event in server.events if event[0] == "gen_ai.first_token"]
    assert server.start_ns <= first[2] <= server.end_ns
    assert server.attributes["gateway.time_to_first_token_ms"] > 0
    assert server.attributes["gen_ai.usage.output_tokens"] == 7
    assert server.parent_span_id == ""  # no traceparent: the gateway's span is the root


def test_a_retry_then_a_fallback_read_as_a_waterfall(
    gateway: RunningGateway, upstream: FakeUpstream, receiver: HttpReceiver
) -> None:
    upstream.behave("hasty-model", fail_always=503)
    raw = gateway.client().chat.completions.with_raw_response.create(
        model="flaky", messages=MESSAGES
    )
    trace_id = raw.headers["x-gateway-trace-id"]
    spans = _spans(receiver, trace_id, 4)
    server = _server(spans)
    attempts = _clients(spans)
    tried = [(a.attributes["gateway.provider"], a.attributes["gateway.retry"]) for a in attempts]
    assert tried == [("impatient", 0), ("impatient", 1), ("fake", 0)]
    first, second, served = attempts
    assert first.attributes["error.type"] == "http_5xx" and first.attributes["gateway.retried"]
    assert second.attributes["gateway.retried"] is False
    assert second.attributes["gateway.not_retried_because"] == "its 1 retries are spent"
    assert served.attributes["http.response.status_code"] == 200
    assert all(a.parent_span_id == server.span_id for a in attempts)
    assert server.attributes["gateway.fallback_depth"] == 1
    assert server.attributes["gateway.provider_retries"] == 1


def test_a_cache_hit_has_no_attempt_and_says_so(
    gateway: RunningGateway, receiver: HttpReceiver
) -> None:
    client = gateway.client()
    client.chat.completions.create(model="cached", messages=MESSAGES)
    raw = client.chat.completions.with_raw_response.create(model="cached", messages=MESSAGES)
    assert raw.headers["x-gateway-cache"] == "hit"
    spans = _spans(receiver, raw.headers["x-gateway-trace-id"], 1)
    assert _server(spans).attributes["gateway.cache_hit"] is True
    assert _clients(spans) == []


def test_a_budget_refusal_and_an_upstream_failure_are_error_spans(
    gateway: RunningGateway, upstream: FakeUpstream, receiver: HttpReceiver
) -> None:
    client = gateway.client()
    client.chat.completions.create(model="once", messages=MESSAGES)
    with pytest.raises(openai.RateLimitError) as refused:
        client.chat.completions.create(model="once", messages=MESSAGES)
    server = _server(_spans(receiver, refused.value.response.headers["x-gateway-trace-id"], 1))
    assert server.attributes["error.type"] == "budget_exceeded"
    assert server.attributes["gateway.budget.outcome"] == "exceeded"
    assert server.status_code == 2

    upstream.behave("small-model", fail_always=500)
    with pytest.raises(openai.InternalServerError) as failed:
        client.chat.completions.create(model="chat", messages=MESSAGES)
    spans = _spans(receiver, failed.value.response.headers["x-gateway-trace-id"], 4)
    assert _server(spans).attributes["error.type"] == "upstream_5xx"
    assert len(_clients(spans)) == 3  # the first try and its two retries


def test_a_rate_limit_refusal_is_an_error_span_that_says_so(
    gateway: RunningGateway, receiver: HttpReceiver
) -> None:
    client = gateway.client()
    client.chat.completions.create(model="limited", messages=MESSAGES)
    with pytest.raises(openai.RateLimitError) as refused:
        client.chat.completions.create(model="limited", messages=MESSAGES)
    assert refused.value.code == "rate_limit_exceeded"
    spans = _spans(receiver, refused.value.response.headers["x-gateway-trace-id"], 1)
    server = _server(spans)
    assert server.attributes["error.type"] == "rate_limit_exceeded"
    assert server.attributes["gateway.rate_limit.outcome"] == "refused"
    assert server.status_code == 2
    assert _clients(spans) == []  # nothing was sent upstream


def test_content_is_captured_only_when_enabled_and_keys_are_redacted(
    upstream: FakeUpstream, sqlite_url: str, receiver: HttpReceiver, gateway: RunningGateway
) -> None:
    raw = gateway.client().chat.completions.with_raw_response.create(
        model="chat", messages=MESSAGES
    )
    server = _server(_spans(receiver, raw.headers["x-gateway-trace-id"], 2))
    assert server.events == []  # no content by default
    gateway.stop()

    secret = [{"role": "user", "content": "my key is sk-upstream-secret-42, keep it"}]
    otel = f'endpoint: "{receiver.url}", captureContent: true'
    with running_gateway(_yaml(upstream, sqlite_url, otel)) as capturing:
        raw = capturing.client().chat.completions.with_raw_response.create(
            model="chat", messages=secret
        )
        server = _server(_spans(receiver, raw.headers["x-gateway-trace-id"], 2))
    details = [e[1] for e in server.events if e[0] == "gen_ai.client.inference.operation.details"]
    inputs = [d["gen_ai.input.messages"] for d in details if "gen_ai.input.messages" in d]
    outputs = [d["gen_ai.output.messages"] for d in details if "gen_ai.output.messages" in d]
    assert "keep it" in inputs[0] and "sk-upstream-secret-42" not in inputs[0]
    assert "[redacted]" in inputs[0]
    assert "Hello from the fake upstream." in outputs[0]


def test_a_streamed_answer_is_captured_whole_when_enabled(
    upstream: FakeUpstream, sqlite_url: str, receiver: HttpReceiver
) -> None:
    otel = f'endpoint: "{receiver.url}", captureContent: true'
    with running_gateway(_yaml(upstream, sqlite_url, otel)) as capturing:
        stream = capturing.client().chat.completions.with_raw_response.create(
            model="chat", messages=MESSAGES, stream=True
        )
        text = "".join(
            chunk.choices[0].delta.content or ""
            for chunk in stream.parse()
            if chunk.choices and chunk.choices[0].delta
        )
        server = _server(_spans(receiver, stream.headers["x-gateway-trace-id"], 2))
    details = [e[1] for e in server.events if e[0] == "gen_ai.client.inference.operation.details"]
    (output,) = [d["gen_ai.output.messages"] for d in details if "gen_ai.output.messages" in d]
    (message,) = json.loads(output)
    assert text and message["content"] == text
    assert message["role"] == "assistant" and message["finish_reason"] == "stop"


def test_an_absent_collector_costs_no_call_and_no_row_and_counts_its_drops(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    closed = HttpReceiver()
    url = closed.url
    closed.close()  # nothing listens there now
    otel = f'endpoint: "{url}", exportTimeoutSeconds: 0.5'
    with running_gateway(_yaml(upstream, sqlite_url, otel)) as gateway:
        client = gateway.client()
        for _ in range(5):
            assert client.chat.completions.create(model="chat", messages=MESSAGES).choices
        assert len(gateway.rows(expect=5)) == 5
        dropped = 0.0
        for _ in range(100):
            metrics = httpx.get(f"{gateway.url}/metrics", timeout=5).text
            name = "gateway_otel_spans_dropped"
            line = [x for x in metrics.splitlines() if x.startswith(name)]
            dropped = float(line[0].split()[-1]) if line else 0.0
            if dropped >= 10:
                break
            time.sleep(0.1)
        assert dropped >= 10  # 5 server spans and 5 client spans, none delivered


def test_a_slow_collector_delays_no_call(
    upstream: FakeUpstream, sqlite_url: str, receiver: HttpReceiver
) -> None:
    receiver.delay_seconds = 3.0
    otel = f'endpoint: "{receiver.url}"'
    with running_gateway(_yaml(upstream, sqlite_url, otel)) as gateway:
        client = gateway.client(timeout=2.5)  # a call waiting on the collector would time out
        for _ in range(3):
            client.chat.completions.create(model="chat", messages=MESSAGES)
        assert len(gateway.rows(expect=3)) == 3


def test_grpc_and_no_propagation_upstream(upstream: FakeUpstream, sqlite_url: str) -> None:
    collector = GrpcReceiver()
    try:
        otel = f'endpoint: "{collector.url}", protocol: grpc, propagateUpstream: false'
        with running_gateway(_yaml(upstream, sqlite_url, otel)) as gateway:
            client = gateway.client(default_headers={"traceparent": TRACEPARENT})
            client.chat.completions.create(model="chat", messages=MESSAGES)
            spans = collector.wait_for(2)
        assert {span.trace_id for span in spans} == {CLIENT_TRACE}
        assert "traceparent" not in _sent_headers(upstream)
        assert _server(spans).attributes["gen_ai.request.model"] == "chat"
    finally:
        collector.close()


def test_sampled_out_calls_have_no_span_and_no_trace_id(
    upstream: FakeUpstream, sqlite_url: str, receiver: HttpReceiver
) -> None:
    otel = f'endpoint: "{receiver.url}", sampleRatio: 0'
    with running_gateway(_yaml(upstream, sqlite_url, otel)) as gateway:
        raw = gateway.client().chat.completions.with_raw_response.create(
            model="chat", messages=MESSAGES
        )
        assert "x-gateway-trace-id" not in raw.headers
        (row,) = gateway.rows(expect=1)
        assert row["trace_id"] is None
        gateway.server.run(_flush(gateway))
    assert receiver.spans == []


def test_a_clients_unsampled_trace_records_nothing_and_passes_its_traceparent_on(
    upstream: FakeUpstream, sqlite_url: str, receiver: HttpReceiver
) -> None:
    unsampled = f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-00"
    otel = f'endpoint: "{receiver.url}", sampleRatio: 1'
    with running_gateway(_yaml(upstream, sqlite_url, otel)) as gateway:
        client = gateway.client(
            default_headers={"traceparent": unsampled, "tracestate": "vendor=1"}
        )
        raw = client.chat.completions.with_raw_response.create(model="chat", messages=MESSAGES)
        assert "x-gateway-trace-id" not in raw.headers
        sent = _sent_headers(upstream)
        assert (sent["traceparent"], sent["tracestate"]) == (unsampled, "vendor=1")
        (row,) = gateway.rows(expect=1)
        assert row["trace_id"] is None
        gateway.server.run(_flush(gateway))
    assert receiver.spans == []


async def _flush(gateway: RunningGateway) -> None:
    await asyncio.to_thread(gateway.runtime.tracer.shutdown)


def test_gateway_serve_with_two_workers_exports_every_call_and_flushes_on_sigterm(
    tmp_path: Path, receiver: HttpReceiver
) -> None:
    port = free_port()
    config = tmp_path / "gateway.yaml"
    config.write_text(
        f'server: {{workers: 2}}\ndatabase: {{url: "sqlite+aiosqlite:///{tmp_path}/g.db"}}\n'
        "auth: {allowUnauthenticated: true}\n"
        f'telemetry: {{otel: {{enabled: true, endpoint: "{receiver.url}"}}}}\n'
        "providers: [{id: demo, adapter: echo}]\n"
        "models: [{id: m, provider: demo, capabilities: [chat]}]\n"
        "configurations: [{id: c, mode: fixed, model: m}]\n"
    )
    trace_ids = set()
    with serving(config, "--port", str(port), port=port) as served:
        for _ in range(8):
            answer = httpx.post(
                f"{served.base}/v1/chat/completions",
                json={"model": "c", "messages": MESSAGES},
                timeout=10,
            )
            assert answer.status_code == 200
            trace_ids.add(answer.headers["x-gateway-trace-id"])
        served.stop()  # SIGTERM: each worker's exporter sends what it holds
    spans = receiver.wait_for(16, timeout=15)
    assert {span.trace_id for span in spans if span.kind == SERVER} == trace_ids
    assert len([span for span in spans if span.kind == CLIENT]) == 8
