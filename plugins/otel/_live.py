"""The `otel` plugin's worker: a thread that folds each finished turn's events into spans and hands them to the
SDK's batch processor (which sends them from a thread of its own), and the exporter wrapper that warns once when the
collector cannot be reached. Imported only when a deployment loads the plugin."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from dsh.runtime.session import PriceTable, SessionStats, StoredEvent, fold_stats

from ._plugin import OtelConfig
from ._spans import content_of, quiet_exporter, resource, session_spans

__all__ = ["Exporter", "Session", "Turn"]

log = logging.getLogger("dsh.otel")


@dataclass
class Session:
    """What the worker knows of one session: its tree's root, the span it hangs under, its figures so far."""

    id: str
    root: str
    parent: int | None
    totals: SessionStats
    started: int | None = None
    ended: int | None = None


@dataclass
class Turn:
    session: Session
    events: list[StoredEvent] = field(default_factory=list)


_CLOSE = object()
_STOP = object()


class Exporter:
    """The worker thread and the batch processor; `submit` and `close_session` are the loop's only calls."""

    def __init__(self, config: OtelConfig, prices: PriceTable | None) -> None:
        self.config = config
        self.prices = prices
        self.resource = resource()
        self.sender = _Warning(
            OTLPSpanExporter(endpoint=config.endpoint, headers=config.headers, timeout=config.timeout_s)
        )
        self.processor = BatchSpanProcessor(
            self.sender,
            schedule_delay_millis=config.schedule_delay_ms,
            export_timeout_millis=config.timeout_s * 1000,
        )
        self.quiet = quiet_exporter()
        self.quiet.__enter__()  # until `stop`: the one warning below speaks for every failed batch
        self.queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.worker = threading.Thread(target=self._run, name="dsh-otel", daemon=True)
        self.worker.start()

    # -- the loop's side
    def submit(self, turn: Turn) -> None:
        self.queue.put(turn)

    def close_session(self, session: Session) -> None:
        self.queue.put((_CLOSE, session))

    def stop(self, sessions: list[Session]) -> None:
        for session in sessions:
            self.close_session(session)
        self.queue.put(_STOP)
        self.worker.join(timeout=self.config.timeout_s + 5)
        try:
            self.processor.shutdown()  # type: ignore[no-untyped-call]  # the SDK leaves it unannotated
        finally:
            self.quiet.__exit__(None, None, None)

    # -- the worker's side
    def _run(self) -> None:
        while True:
            item = self.queue.get()
            if item is _STOP:
                return
            try:
                if isinstance(item, tuple):
                    self._session_span(item[1])
                else:
                    self._turn_spans(item)
            except Exception:  # contained: a span that cannot be built must not stop the ones after it
                log.exception("otel: could not build spans; the session is unaffected")

    def _turn_spans(self, turn: Turn) -> None:
        session = turn.session
        stats = fold_stats(session.id, turn.events, prices=self.prices)
        session.totals.add(stats)
        if stats.title:
            session.totals.title = stats.title
        for bound in (stats.started, stats.ended):
            if bound is not None:
                session.started = bound if session.started is None else min(session.started, bound)
                session.ended = bound if session.ended is None else max(session.ended, bound)
        content = {session.id: content_of(turn.events)} if self.config.content else None
        for span in session_spans(
            stats,
            root=session.root,
            parent=session.parent,
            content=content,
            turns_only=True,
            res=self.resource,
        ):
            self.processor.on_end(span)

    def _session_span(self, session: Session) -> None:
        totals = session.totals
        totals.started, totals.ended = session.started, session.ended
        for span in session_spans(totals, root=session.root, parent=session.parent, res=self.resource):
            if span.name.startswith("session "):
                self.processor.on_end(span)


class _Warning(SpanExporter):
    """The OTLP exporter, saying once (not per batch) that spans could not be sent."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        self.warned = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result: SpanExportResult = self.inner.export(spans)
        if result is not SpanExportResult.SUCCESS and not self.warned:
            self.warned = True
            log.warning(
                "otel: could not export spans to %s (the collector is down or refused them); the session goes on, "
                "its spans are dropped, and later failures are not reported",
                getattr(self.inner, "_endpoint", "the collector"),
            )
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return bool(self.inner.force_flush(timeout_millis))
