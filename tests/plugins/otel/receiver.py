"""A real OTLP/HTTP trace receiver on 127.0.0.1 for tests: it decodes each POST with opentelemetry-proto's
`ExportTraceServiceRequest` and keeps the spans, with their resource's attributes, as plain values."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return tuple(_value(v) for v in value.array_value.values)
    return getattr(value, kind) if kind is not None else None


@dataclass(frozen=True)
class Span:
    """One received span: ids as hex, times in ns since the epoch, attributes as plain values."""

    name: str
    trace_id: str
    span_id: str
    parent_id: str
    kind: int
    start: int
    end: int
    attributes: dict[str, Any]
    status_code: int
    resource: dict[str, Any]


@dataclass
class Receiver:
    url: str
    spans: list[Span] = field(default_factory=list)
    requests: int = 0
    paths: list[str] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)

    def named(self, prefix: str) -> list[Span]:
        return [span for span in self.spans if span.name.startswith(prefix)]


@contextmanager
def otlp_receiver() -> Iterator[Receiver]:
    """Serve until the block ends; `receiver.url` is `http://127.0.0.1:PORT`."""
    lock = threading.Lock()
    holder: list[Receiver] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # http.server's name
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            received = holder[0]
            with lock:
                received.requests += 1
                received.paths.append(self.path)
                received.headers.append(dict(self.headers.items()))
                for resource_spans in request.resource_spans:
                    resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
                    for scope in resource_spans.scope_spans:
                        for span in scope.spans:
                            received.spans.append(
                                Span(
                                    name=span.name,
                                    trace_id=span.trace_id.hex(),
                                    span_id=span.span_id.hex(),
                                    parent_id=span.parent_span_id.hex(),
                                    kind=span.kind,
                                    start=span.start_time_unix_nano,
                                    end=span.end_time_unix_nano,
                                    attributes={a.key: _value(a.value) for a in span.attributes},
                                    status_code=span.status.code,
                                    resource=resource,
                                )
                            )
            reply = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, format: str, *args: Any) -> None:  # http.server's signature
            return  # keep the test output quiet

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    holder.append(Receiver(f"http://127.0.0.1:{server.server_address[1]}"))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield holder[0]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def closed_port() -> str:
    """A 127.0.0.1 URL nothing listens on (a port bound, then released)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"
