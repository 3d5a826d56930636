"""OTLP trace receivers on loopback, as a collector would run them: HTTP/protobuf
(``POST /v1/traces``) and gRPC (``TraceService/Export``), decoding with opentelemetry-proto."""

from __future__ import annotations

import threading
import time
from concurrent import futures
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


@dataclass
class ReceivedSpan:
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    kind: int  # SPAN_KIND_SERVER = 2, SPAN_KIND_CLIENT = 3
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any], int]]
    status_code: int  # 0 unset, 1 ok, 2 error
    start_ns: int
    end_ns: int
    service_name: str = ""
    headers: dict[str, str] = field(default_factory=dict)


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    return getattr(value, kind) if kind is not None else None


def _attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: _value(pair.value) for pair in pairs}


def decode(request: trace_service_pb2.ExportTraceServiceRequest) -> list[ReceivedSpan]:
    spans: list[ReceivedSpan] = []
    for resource_spans in request.resource_spans:
        service = str(_attributes(resource_spans.resource.attributes).get("service.name", ""))
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append(
                    ReceivedSpan(
                        name=span.name,
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_span_id=span.parent_span_id.hex(),
                        kind=span.kind,
                        attributes=_attributes(span.attributes),
                        events=[
                            (e.name, _attributes(e.attributes), e.time_unix_nano)
                            for e in span.events
                        ],
                        status_code=span.status.code,
                        start_ns=span.start_time_unix_nano,
                        end_ns=span.end_time_unix_nano,
                        service_name=service,
                    )
                )
    return spans


class _Collected:
    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self.headers: list[dict[str, str]] = []
        self.delay_seconds = 0.0
        self._lock = threading.Lock()

    def add(self, spans: list[ReceivedSpan], headers: dict[str, str]) -> None:
        with self._lock:
            self.spans.extend(spans)
            self.headers.append(headers)

    def wait_for(self, count: int, timeout: float = 10.0) -> list[ReceivedSpan]:
        """At least ``count`` spans (the exporter sends once a second), else what came."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if len(self.spans) >= count:
                    return list(self.spans)
            time.sleep(0.05)
        with self._lock:
            return list(self.spans)

    def of_trace(self, trace_id: str) -> list[ReceivedSpan]:
        with self._lock:
            return [span for span in self.spans if span.trace_id == trace_id]


class HttpReceiver(_Collected):
    def __init__(self) -> None:
        super().__init__()
        collected = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                raw = self.rfile.read(length)
                if collected.delay_seconds:
                    time.sleep(collected.delay_seconds)
                status = 404
                if self.path == "/v1/traces":
                    request = trace_service_pb2.ExportTraceServiceRequest()
                    request.ParseFromString(raw)
                    collected.add(decode(request), {k.lower(): v for k, v in self.headers.items()})
                    status = 200
                body = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
                self.send_response(status)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class GrpcReceiver(_Collected):
    def __init__(self) -> None:
        super().__init__()
        import grpc

        collected = self

        class Service(trace_service_pb2_grpc.TraceServiceServicer):
            def Export(
                self, request: trace_service_pb2.ExportTraceServiceRequest, context: Any
            ) -> trace_service_pb2.ExportTraceServiceResponse:
                metadata = {k: v for k, v in context.invocation_metadata()}
                collected.add(decode(request), metadata)
                return trace_service_pb2.ExportTraceServiceResponse()

        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Service(), self._server)
        port = self._server.add_insecure_port("127.0.0.1:0")
        self._server.start()
        self.url = f"http://127.0.0.1:{port}"

    def close(self) -> None:
        self._server.stop(grace=None)
