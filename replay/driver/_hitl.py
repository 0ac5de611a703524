"""Human in the loop in a re-run: the recording decides every approval (its recorded outcome is applied and nobody
is asked; a call the re-run asks about that the recording did not is a `ReplayMismatch` naming the call), hooks are
served from the recording when a scenario says `hooks: recorded` (each hook run gets the recorded outcome of the
run at the same turn, point and place), and the slash commands a recording ran between turns are read so the driver
runs them again where they were."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from dsh.plugins.hooks import HOOK_RUNS, HookOutput, HookPoint, ServedRun, matches
from dsh.runtime.kernel import Context
from dsh.runtime.llm import PluginSource, TextBlock
from dsh.runtime.session import (
    ApprovalAsked,
    ApprovalDecided,
    CommandRun,
    HookInvoked,
    HookResult,
    InboxSpliced,
    StepStart,
    ToolCall,
    ToolCallData,
    TurnStart,
)
from dsh.runtime.tools import DECIDE, Approval, ApprovalRequest

from ..recordings._errors import ReplayMismatch
from ..recordings._source import RecordedLog
from ._adapter import ReplayAdapter

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

_DIALECT = {"claude": "claude-code"}
"""Dialect names an older original wrote, as dsh names them."""


@dataclass
class _Group:
    """The hook runs of one point's invocation in a recording, in order: each run's matcher and outcome."""

    turn: int
    step: int
    point: str
    dialect: str
    runs: list[ServedRun] = field(default_factory=list)


def _hook_groups(log: RecordedLog) -> dict[tuple[int, str, str, str], list[_Group]]:
    """A log's hook runs grouped by invocation and keyed (turn, point, dialect, anchor): the anchor of a tool point
    is the id of the call it ran for (the step's calls in order, matched by the group's matcher), of Stop its step.
    What the model got from a run is taken from what follows it: an `ask`'s reason from the approval asked next, a
    context from the hooks' splice that follows."""
    groups: list[_Group] = []
    calls: dict[tuple[int, int], list[tuple[str, str]]] = {}
    step = 0
    open_group: _Group | None = None
    last: HookOutput | None = None
    for event, _ in log.events():
        if event.seq < log.info.seed_length:
            continue
        kind = event.type
        if kind not in (HookInvoked.TAG, HookResult.TAG):
            open_group = None  # a run of a point's hooks is uninterrupted
        if kind in (TurnStart.TAG, StepStart.TAG):
            last = None  # what a hook gave the model follows it within its step
        if kind == StepStart.TAG:
            started = event.view()
            assert isinstance(started, StepStart)
            step = started.data.step
        elif kind == ToolCall.TAG:
            data = event.view().data
            assert isinstance(data, ToolCallData)
            calls.setdefault((data.turn, data.step), []).append((data.call_id, data.name))
        elif kind == HookInvoked.TAG:
            invoked = event.view()
            assert isinstance(invoked, HookInvoked)
            d = invoked.data
            dialect = _DIALECT.get(d.dialect, d.dialect)
            if open_group is None or (open_group.point, open_group.dialect) != (d.point, dialect):
                open_group = _Group(d.turn, step, d.point, dialect)
                groups.append(open_group)
            open_group.runs.append(ServedRun(d.matcher, HookOutput(None, "", "")))
        elif kind == HookResult.TAG and open_group is not None and open_group.runs:
            result = event.view()
            assert isinstance(result, HookResult)
            r = result.data
            decision = None if r.decision in ("pass", "stop") else r.decision
            stderr = r.stderr_summary or ""
            last = HookOutput(r.exit_code, stderr, "", decision, stderr or None)
            if r.decision == "stop":
                last.continue_ = False
            open_group.runs[-1] = ServedRun(open_group.runs[-1].matcher, last)
        elif kind == ApprovalAsked.TAG and last is not None and last.decision == "ask":
            asked = event.view()
            assert isinstance(asked, ApprovalAsked)
            last.reason = asked.data.reason
            last = None
        elif kind == InboxSpliced.TAG and last is not None:
            spliced = event.view()
            assert isinstance(spliced, InboxSpliced)
            texts = [
                "".join(b.text for b in m.content if isinstance(b, TextBlock))
                for m in spliced.data.inserted
                if isinstance(m.source, PluginSource) and m.source.plugin.startswith("hooks")
            ]
            if texts and last.decision is None:
                last.additional_context = "\n\n".join(texts)
            last = None
    keyed: dict[tuple[int, str, str, str], list[_Group]] = {}
    taken: dict[tuple[int, int, str, str], int] = {}
    for group in groups:
        anchor = ""
        if group.point in ("PreToolUse", "PostToolUse"):
            step_calls = calls.get((group.turn, group.step), [])
            place = (group.turn, group.step, group.point, group.dialect)
            start = taken.get(place, 0)
            matcher = group.runs[0].matcher if group.runs else None
            for index in range(start, len(step_calls)):
                if matches(matcher, step_calls[index][1]):
                    anchor, taken[place] = step_calls[index][0], index + 1
                    break
        elif group.point == "Stop":
            anchor = str(group.step)
        keyed.setdefault((group.turn, group.point, group.dialect, anchor), []).append(group)
    return keyed


class RecordedHooks:
    """The `hooks/runs` listener under `hooks: recorded`: each point is served the runs the bound recording logged
    at the same turn, point, dialect and anchor (none: no hook ran there), whatever the workspace configures."""

    def __init__(self, adapter: ReplayAdapter) -> None:
        self._adapter = adapter
        self._logs = {log.info.name: log for log in adapter.recording.logs}
        self._tapes: dict[str, dict[tuple[int, str, str, str], list[_Group]]] = {}

    async def runs(
        self, value: list[ServedRun] | None, point: HookPoint, next_: Any
    ) -> list[ServedRun] | None:
        session = point.agent.id if point.agent is not None else None
        name = self._adapter.bindings().get(session) if session is not None else None
        if name is None or name not in self._logs:
            return await next_(value)  # type: ignore[no-any-return]  # an unbound session runs its hooks live
        tape = self._tapes.setdefault(name, _hook_groups(self._logs[name]))
        queue = tape.get((point.turn, point.point, point.dialect, point.anchor), [])
        return list(queue.pop(0).runs) if queue else []


def serve_recorded_hooks(ctx: Context, adapter: ReplayAdapter) -> RecordedHooks:
    hooks = RecordedHooks(adapter)
    ctx.on(HOOK_RUNS, hooks.runs)
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
        if event.seq < log.info.seed_length or event.type not in (CommandRun.TAG, TurnStart.TAG):
            continue
        view = event.view()
        if isinstance(view, CommandRun):
            pending.append((view.data.name, view.data.args))
        elif isinstance(view, TurnStart):
            out += [RecordedCommand(view.data.turn, name, args) for name, args in pending]
            pending = []
    out += [RecordedCommand(None, name, args) for name, args in pending]
    return out
