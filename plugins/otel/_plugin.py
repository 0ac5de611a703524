"""The `otel` plugin: exports every agent's session as OpenTelemetry spans while it runs.

The loop's side is one list append per event (`agent/event`) and, at each `turn/end`, one hand-over of the turn's
events to a worker thread; the worker folds them (`fold_stats`) into the turn's spans and gives them to the SDK's
batch processor, which sends them from its own thread. A session's own span is sent when its agent closes (or when
the plugin unloads). A collector that cannot be reached costs the turn nothing: the spans are dropped and one
warning says so, once per plugin load."""

from __future__ import annotations

import msgspec

from dsh.runtime.agent import EVENT, Agent, AgentEvent
from dsh.runtime.kernel import Context, Plugin
from dsh.runtime.session import PRICES, SessionStats, TurnEnd

__all__ = ["OtelConfig", "plugin"]


class OtelConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Where and what to export. `endpoint` (the full traces URL) and `headers` default to the standard
    `OTEL_EXPORTER_OTLP_*` variables; `content: true` exports what the model said and the tools' arguments and
    results (off: only names, times, models, usage and outcomes leave the machine). `timeout_s` bounds each export
    request, and so how long unloading waits for the last spans; `schedule_delay_ms` is how long spans wait to be
    batched."""

    endpoint: str | None = None
    headers: dict[str, str] | None = None
    content: bool = False
    timeout_s: float = 5.0
    schedule_delay_ms: int = 500


def _placement(agent: Agent) -> tuple[str, int | None]:
    """The root session of an agent's tree and the span its session hangs under."""
    from ._spans import span_id

    root = agent
    while root.parent is not None:
        root = root.parent
    info = agent.info
    if info.parent_id is None:
        return root.id, None
    if info.spawned_by is not None:
        return root.id, span_id(info.parent_id, "tool", info.spawned_by.call_id)
    return root.id, span_id(info.parent_id, "session")


def _apply(ctx: Context, config: OtelConfig) -> None:
    from ._live import Exporter, Session, Turn  # OpenTelemetry is imported when a deployment loads the plugin

    exporter = Exporter(config, ctx.get(PRICES) if ctx.has(PRICES) else None)
    turns: dict[str, Turn] = {}
    sessions: dict[str, Session] = {}

    def open_session(agent: Agent) -> Turn:
        root, parent = _placement(agent)
        session = Session(agent.id, root, parent, SessionStats(session=agent.id))
        sessions[agent.id] = session

        def closed() -> None:
            if sessions.pop(agent.id, None) is not None:
                exporter.close_session(session)

        agent.ctx.effect(closed)  # the agent's scope is disposed as it closes
        turn = turns[agent.id] = Turn(session)
        return turn

    async def on_event(appended: AgentEvent) -> None:
        agent, event = appended.agent, appended.event
        turn = turns.get(agent.id) or open_session(agent)
        turn.events.append(event)
        if event.type == TurnEnd.TAG:
            exporter.submit(turn)
            turns[agent.id] = Turn(turn.session)

    ctx.on(EVENT, on_event)
    ctx.effect(lambda: exporter.stop(list(sessions.values())))


plugin = Plugin(
    name="otel",
    apply=_apply,
    config=OtelConfig,
    description="exports each session as OpenTelemetry GenAI spans over OTLP/HTTP while it runs",
)
