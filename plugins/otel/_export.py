"""`export_stored`: a stored session, with its subagents and forks, sent as one trace over OTLP/HTTP (protobuf) to
where the standard variables point (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, else `OTEL_EXPORTER_OTLP_ENDPOINT` +
`/v1/traces`, else `http://localhost:4318/v1/traces`; headers from `OTEL_EXPORTER_OTLP_HEADERS`). What
`dsh sessions trace` runs (through the `dsh.trace` entry point: the CLI imports no plugin)."""

from __future__ import annotations

from typing import NamedTuple

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from dsh.runtime.kernel.errors import DshError
from dsh.runtime.session import (
    PriceTable,
    SessionInfo,
    SessionNotFoundError,
    SessionStats,
    SessionStoreProtocol,
    session_stats,
)

from ._spans import Content, content_of, quiet_exporter, session_spans, span_id

__all__ = ["TraceExportError", "TraceSent", "export_stored", "parent_span", "root_session"]


class TraceSent(NamedTuple):
    """What `export_stored` sent: how many spans, to which endpoint, in which trace (32 hex digits)."""

    spans: int
    endpoint: str
    trace_id: str


class TraceExportError(DshError):
    """The collector refused the spans or could not be reached; `endpoint` is where they were sent."""

    def __init__(self, message: str, *, endpoint: str) -> None:
        super().__init__(message)
        self.endpoint = endpoint


def _info(store: SessionStoreProtocol, session_id: str | None) -> SessionInfo | None:
    if session_id is None:
        return None
    try:
        return store.info(session_id)
    except (
        SessionNotFoundError
    ):  # a parent named by an imported log but not in this store: the tree stops here
        return None


def root_session(store: SessionStoreProtocol, info: SessionInfo) -> str:
    """The id of the root of `info`'s tree: its parents followed as far as the store holds them."""
    seen = {info.id}
    current = info
    while (parent := _info(store, current.parent_id)) is not None and parent.id not in seen:
        seen.add(parent.id)
        current = parent
    return current.id


def parent_span(store: SessionStoreProtocol, info: SessionInfo) -> int | None:
    """The span a child session hangs under: the tool call of its parent that spawned it, else its parent's session
    span; None for a root (or a parent the store does not hold)."""
    parent = _info(store, info.parent_id)
    if parent is None:
        return None
    if info.spawned_by is not None:
        return span_id(parent.id, "tool", info.spawned_by.call_id)
    return span_id(parent.id, "session")


def _contents(
    store: SessionStoreProtocol, stats: SessionStats, into: dict[str, Content]
) -> dict[str, Content]:
    info = store.info(stats.session)
    into[stats.session] = content_of(store.events(stats.session, start=info.seed_length or 0))
    for child in stats.children:
        _contents(store, child, into)
    return into


def export_stored(
    store: SessionStoreProtocol,
    session_id: str,
    *,
    content: bool = False,
    prices: PriceTable | None = None,
    exporter: SpanExporter | None = None,
) -> TraceSent:
    """Send session `session_id` and its children as one trace; say what was sent. `content` adds
    what the model said and the tools' arguments and results. Raises `TraceExportError` when the collector
    refuses them or cannot be reached (after the exporter's own retries, within `OTEL_EXPORTER_OTLP_TIMEOUT`)."""
    info = store.info(session_id)
    stats = session_stats(store, info.id, prices=prices)
    spans = session_spans(
        stats,
        root=root_session(store, info),
        parent=parent_span(store, info),
        content=_contents(store, stats, {}) if content else None,
    )
    sender = exporter if exporter is not None else OTLPSpanExporter()
    endpoint = str(getattr(sender, "_endpoint", "the exporter"))
    with quiet_exporter():
        try:
            result = sender.export(spans)
        finally:
            sender.shutdown()
    if result is not SpanExportResult.SUCCESS:
        raise TraceExportError(
            f"could not export session {info.id} ({len(spans)} spans) to {endpoint}: the collector refused them "
            "or could not be reached; set OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) to "
            "a running OTLP/HTTP receiver",
            endpoint=endpoint,
        )
    return TraceSent(len(spans), endpoint, f"{spans[0].context.trace_id:032x}")
