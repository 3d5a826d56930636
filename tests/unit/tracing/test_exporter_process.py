import multiprocessing
from typing import Any

from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.trace import SpanKind, StatusCode

from gateway.domain.settings import OtelSettings
from gateway.tracing.exporter_process import (
    SpanBuilder,
    export_batch,
    http_endpoint,
    protocol_of,
)


def test_a_span_tuple_becomes_the_sdks_span() -> None:
    builder = SpanBuilder(OtelSettings(service_name="gw"))
    event = ("gen_ai.first_token", {"gateway.time_to_first_token_ms": 5.0}, 150)
    server = builder.build(
        ("chat smart", 7, 8, 9, True, 2, 100, 200, {"a": 1}, [event], "upstream_5xx")
    )
    assert server.name == "chat smart" and server.kind is SpanKind.SERVER
    assert (server.context.trace_id, server.context.span_id) == (7, 8)
    assert server.parent is not None and server.parent.span_id == 9 and server.parent.is_remote
    assert server.status.status_code is StatusCode.ERROR
    assert server.events[0].name == "gen_ai.first_token" and server.events[0].timestamp == 150
    assert server.resource.attributes["service.name"] == "gw"
    root = builder.build(("embeddings e", 7, 10, 0, False, 3, 1, 2, {}, [], None))
    assert root.parent is None and root.kind is SpanKind.CLIENT
    assert root.status.status_code is StatusCode.UNSET


class _Exporter:
    def __init__(self, result: SpanExportResult | None) -> None:
        self.result = result

    def export(self, spans: Any) -> SpanExportResult:
        if self.result is None:
            raise ConnectionError("collector away")
        return self.result


def test_spans_an_export_did_not_deliver_are_counted() -> None:
    undelivered = multiprocessing.get_context("spawn").Value("q", 0)
    export_batch(_Exporter(SpanExportResult.SUCCESS), [1, 2], undelivered)
    assert undelivered.value == 0
    export_batch(_Exporter(SpanExportResult.FAILURE), [1, 2, 3], undelivered)
    export_batch(_Exporter(None), [1], undelivered)
    assert undelivered.value == 4


def test_the_endpoint_and_protocol_follow_the_otlp_rules(monkeypatch: Any) -> None:
    assert http_endpoint("http://c:4318") == "http://c:4318/v1/traces"
    assert http_endpoint("http://c:4318/v1/traces/") == "http://c:4318/v1/traces"
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", raising=False)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    assert protocol_of(OtelSettings()) == "grpc"
    assert protocol_of(OtelSettings(protocol="http/protobuf")) == "http/protobuf"  # YAML wins
