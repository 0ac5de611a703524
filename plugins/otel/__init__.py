"""OpenTelemetry export: the `otel` plugin (live, as sessions run) and `export_stored` (a stored session, for
`dsh sessions trace`), as GenAI spans over OTLP/HTTP. Needs the `otel` extra (`pip install 'dsh-runtime[otel]'`);
the plugin's declaration imports none of it, so a deployment check names what is missing."""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ._export import TraceExportError as TraceExportError
    from ._export import TraceSent as TraceSent
    from ._export import export_stored as export_stored
    from ._plugin import OtelConfig as OtelConfig
    from ._plugin import plugin as plugin
    from ._spans import Content as Content
    from ._spans import content_of as content_of
    from ._spans import session_spans as session_spans
    from ._spans import span_id as span_id
    from ._spans import trace_id as trace_id

__all__ = [
    "Content",
    "OtelConfig",
    "TraceExportError",
    "TraceSent",
    "content_of",
    "export_stored",
    "plugin",
    "session_spans",
    "span_id",
    "trace_id",
]

_LAZY = {
    "Content": "._spans",
    "OtelConfig": "._plugin",
    "TraceExportError": "._export",
    "TraceSent": "._export",
    "content_of": "._spans",
    "export_stored": "._export",
    "plugin": "._plugin",
    "session_spans": "._spans",
    "span_id": "._spans",
    "trace_id": "._spans",
}

if not TYPE_CHECKING:
    from dsh.runtime.lazy import lazy_attributes

    __getattr__ = lazy_attributes(__name__, _LAZY, globals())
    del lazy_attributes

del TYPE_CHECKING
