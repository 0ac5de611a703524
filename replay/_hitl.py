"""Human in the loop in a re-run: the recording decides every approval (its recorded outcome is applied and nobody
is asked; a call the re-run asks about that the recording did not is a `ReplayMismatch` naming the call), hooks are
served from the recording when a scenario says `hooks: recorded` (each hook run gets the recorded outcome of the
run at the same turn, point and place), and the slash commands a recording ran between turns are read so the driver
runs them again where they were."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from dsh.plugins.hooks import HOOK_RUN, HookCall, HookOutput
from dsh.runtime.kernel import Context
from dsh.runtime.llm import PluginSource, TextBlock
from dsh.runtime.session import (
    ApprovalAsked,
    ApprovalDecided,
    CommandRun,
    HookResult,
    InboxSpliced,
    TurnStart,
)
from dsh.runtime.tools import DECIDE, Approval, ApprovalRequest

from ._adapter import ReplayAdapter
from ._errors import ReplayMismatch
from ._source import RecordedLog

__all__ = [
    "HookMode",
    "RecordedCommand",
    "recorded_commands",
    "serve_recorded_approvals",
    "serve_recorded_hooks",
]

HookMode = Literal["live", "recorded"]

_OUTCOMES = ("allowed-once", "allowed-always", "rejected", "cancelled", "unavailable")


@dataclass
class _Asked:
    tool: str
    reason: str | None
    outcome: str | None = None
    message: str | None = None
    served: bool = False


def _approvals(log: RecordedLog) -> dict[str, _Asked]:
    """The recorded approvals of `log` by call id."""
    by_id: dict[str, tuple[str, _Asked]] = {}
    out: dict[str, _Asked] = {}
    for event, _ in log.events():
        if event.seq < log.info.seed_length or not event.type.startswith("approval/"):
            continue
        view = event.view()
        if isinstance(view, ApprovalAsked) and view.data.call_id is not None:
            asked = _Asked(view.data.tool_name, view.data.reason)
            by_id[view.data.id] = (view.data.call_id, asked)
            out[view.data.call_id] = asked
        elif isinstance(view, ApprovalDecided) and view.data.id in by_id:
            asked = by_id[view.data.id][1]
            asked.outcome, asked.message = view.data.outcome, view.data.message
    return out


class RecordedApprovals:
    """The `approval/decide` listener of a replay: the outcome the bound recording logged for the same call."""

    def __init__(self, adapter: ReplayAdapter) -> None:
        self._adapter = adapter
        self._logs = {log.info.name: log for log in adapter.recording.logs}
        self._tapes: dict[str, dict[str, _Asked]] = {}

    def _tape(self, name: str) -> dict[str, _Asked]:
        if name not in self._tapes:
            self._tapes[name] = _approvals(self._logs[name])
        return self._tapes[name]

    async def decide(self, value: Approval | None, request: ApprovalRequest, next_: Any) -> Approval | None:
        log = request.context.log
        session = log.info.id if log is not None else None
        name = self._adapter.bindings().get(session) if session is not None else None
        asked = f"approval of {request.tool} call {request.call_id}"
        if name is None or name not in self._logs:
            return await self._mismatch(
                f"the re-run asked for {asked} in a session bound to no recorded log", session, None, asked
            )
        recorded = self._tape(name).get(request.call_id)
        if recorded is None:
            return await self._mismatch(
                f"the re-run asked for {asked} (reason: {request.reason}); the recording {name} asked no approval "
                "for that call",
                session,
                name,
                asked,
            )
        recorded.served = True
        if recorded.outcome not in _OUTCOMES:
            return await self._mismatch(
                f"the recording {name} asked {asked} and logged no decision for it", session, name, asked
            )
        return Approval(recorded.outcome, recorded.message)  # type: ignore[arg-type]  # checked against _OUTCOMES

    async def _mismatch(self, message: str, session: str | None, log: str | None, asked: str) -> Approval:
        self._adapter.report(
            ReplayMismatch(
                f"replay mismatch: {message}",
                session_id=session,
                log=log,
                call=None,
                recorded="(no recorded approval)",
                asked=asked,
            )
        )
        return Approval("unavailable")


def serve_recorded_approvals(ctx: Context, adapter: ReplayAdapter) -> RecordedApprovals:
    approvals = RecordedApprovals(adapter)
    ctx.on(DECIDE, approvals.decide)
    return approvals


# ---------------------------------------------------------------------------------------------- hooks


@dataclass
class _HookTape:
    """One log's hook results by (turn, point) in order, with what the model got from each run: the reason of an
    `ask` (the approval asked next) and the context a hook added (the plugin splice that follows)."""

    runs: dict[tuple[int, str], list[HookOutput]] = field(default_factory=dict)
    served: dict[tuple[int, str], int] = field(default_factory=dict)


def _hook_tape(log: RecordedLog) -> _HookTape:
    tape = _HookTape()
    last: HookOutput | None = None
    for event, _ in log.events():
        if event.seq < log.info.seed_length:
            continue
        if event.type not in ("hook/result", "approval/asked", "agent/inbox/spliced", "turn/start"):
            continue
        view = event.view()
        if isinstance(view, HookResult):
            data = view.data
            decision = None if data.decision in ("pass", "stop") else data.decision
            stderr = data.stderr_summary or ""
            output = HookOutput(data.exit_code, stderr, "", decision, stderr or None)
            tape.runs.setdefault((data.turn, data.point), []).append(output)
            last = output
        elif isinstance(view, ApprovalAsked) and last is not None and last.decision == "ask":
            last.reason = view.data.reason
            last = None
        elif isinstance(view, InboxSpliced) and last is not None and last.decision is None:
            texts = [
                "".join(b.text for b in m.content if isinstance(b, TextBlock))
                for m in view.data.inserted
                if isinstance(m.source, PluginSource) and m.source.plugin.startswith("hooks")
            ]
            if texts:
                last.additional_context = "\n\n".join(texts)
                last = None
        elif isinstance(view, TurnStart):
            last = None
    return tape


class RecordedHooks:
    """The `hooks/run` listener under `hooks: recorded`: each run is served the recorded outcome of the run at the
    same (turn, point, place) in the bound recording; a run the recording does not have is a mismatch."""

    def __init__(self, adapter: ReplayAdapter) -> None:
        self._adapter = adapter
        self._logs = {log.info.name: log for log in adapter.recording.logs}
        self._tapes: dict[str, _HookTape] = {}

    async def run(self, value: HookOutput | None, call: HookCall, next_: Any) -> HookOutput | None:
        session = call.agent.id if call.agent is not None else None
        name = self._adapter.bindings().get(session) if session is not None else None
        if name is None or name not in self._logs:
            return await next_(value)  # type: ignore[no-any-return]  # an unbound session runs its hooks live
        tape = self._tapes.setdefault(name, _hook_tape(self._logs[name]))
        key = (call.turn, call.point)
        place = tape.served.get(key, 0)
        runs = tape.runs.get(key, [])
        if place >= len(runs):
            error = ReplayMismatch(
                f"replay mismatch: hook {call.handler_id} ran at {call.point} in turn {call.turn}; the recording "
                f"{name} records {len(runs)} run(s) there",
                session_id=session,
                log=name,
                call=None,
                recorded=f"{len(runs)} hook runs",
                asked=call.handler_id,
            )
            self._adapter.report(error)
            return HookOutput(None, "replay: no recorded hook run here", "")
        tape.served[key] = place + 1
        recorded = runs[place]
        return HookOutput(
            recorded.exit_code,
            recorded.stderr,
            recorded.stdout,
            recorded.decision,
            recorded.reason,
            recorded.additional_context,
        )


def serve_recorded_hooks(ctx: Context, adapter: ReplayAdapter) -> RecordedHooks:
    hooks = RecordedHooks(adapter)
    ctx.on(HOOK_RUN, hooks.run)
    return hooks


# ---------------------------------------------------------------------------------------------- commands


@dataclass(frozen=True)
class RecordedCommand:
    """A slash command the recording ran between turns: before turn `before` (None: after the last)."""

    before: int | None
    name: str
    args: str


def recorded_commands(log: RecordedLog) -> list[RecordedCommand]:
    """The `command/run` events of `log`, each with the turn it preceded."""
    pending: list[tuple[str, str]] = []
    out: list[RecordedCommand] = []
    for event, _ in log.events():
        if event.seq < log.info.seed_length or event.type not in ("command/run", "turn/start"):
            continue
        view = event.view()
        if isinstance(view, CommandRun):
            pending.append((view.data.name, view.data.args))
        elif isinstance(view, TurnStart):
            out += [RecordedCommand(view.data.turn, name, args) for name, args in pending]
            pending = []
    out += [RecordedCommand(None, name, args) for name, args in pending]
    return out
