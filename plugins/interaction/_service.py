"""The interaction service: the `approval` service the tool pipeline asks (the session's policy first, then whoever
answers `approval/ask`), each request logged as `approval/asked` and `approval/decided`; the session's knobs
(permission preset, sandbox mode, approval policy) read from and written to its log; and the slash commands that
change them (`/permission`, `/approval`, `/sandbox`), each logged as `command/run` and `command/done`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import anyio

from dsh.runtime.kernel import Context, ServiceKey
from dsh.runtime.session import (
    ApprovalAsked,
    ApprovalAskedData,
    ApprovalDecided,
    ApprovalDecidedData,
    ApprovalPolicy,
    ApprovalPolicyData,
    CommandDone,
    CommandDoneData,
    CommandRun,
    CommandRunData,
    CommandSource,
    Event,
    PermissionPreset,
    PermissionPresetData,
    SandboxMode,
    SandboxModeData,
    SessionLog,
)
from dsh.runtime.tools import ASK, DECIDE, Approval, ApprovalRequest

from ._policy import KNOB_TYPES, POLICIES, PRESETS, SANDBOX_MODES, Knobs, fold_knobs

__all__ = ["COMMANDS", "INTERACTION", "CommandOutcome", "Interaction"]

COMMANDS = ("permission", "approval", "sandbox")
"""The slash commands this service runs (typed `/permission read-only` in chat)."""


@dataclass(frozen=True)
class CommandOutcome:
    """How a slash command ended (`success` or `error`) and what it tells the user."""

    kind: str
    text: str


def _listing(names: tuple[str, ...] | list[str]) -> str:
    return ", ".join(names)


class Interaction:
    """One per host: `policy` is the approval policy of a session whose log sets none."""

    def __init__(self, ctx: Context, *, policy: str) -> None:
        self._ctx = ctx
        self._policy = policy
        self._always: set[tuple[str, str]] = set()  # (session id, tool) allowed for the rest of the session

    # ------------------------------------------------------------------ the session's knobs

    def knobs(self, log: SessionLog) -> Knobs:
        """What the log has set (its own events and any fork prefix it inherits)."""
        return fold_knobs(log.store.events(log.info.id, types=KNOB_TYPES))

    def policy(self, log: SessionLog | None) -> str:
        """The approval policy in force for the session of `log` (the configured one when the log sets none)."""
        if log is None:
            return self._policy
        return self.knobs(log).policy or self._policy

    # ------------------------------------------------------------------ approvals

    async def request(self, request: ApprovalRequest) -> Approval:
        """Decide one request: a call already allowed for the rest of the session runs unasked; otherwise
        `approval/asked` is logged, a recording (`approval/decide`) or the policy decides, and under `ask` the
        question goes to whoever answers `approval/ask`; `approval/decided` records the outcome."""
        log = request.context.log
        session = log.info.id if log is not None else ""
        if (session, request.tool) in self._always:
            return Approval("allowed-always")
        approval_id = log.ids.new_id("approval") if log is not None else "approval"
        await self._append(
            request,
            ApprovalAsked(
                data=ApprovalAskedData(
                    id=approval_id, tool_name=request.tool, call_id=request.call_id, reason=request.reason
                )
            ),
        )
        try:
            approval = await self._decide(request, log)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self._append(
                    request, ApprovalDecided(data=ApprovalDecidedData(id=approval_id, outcome="cancelled"))
                )
            raise
        await self._append(
            request,
            ApprovalDecided(
                data=ApprovalDecidedData(id=approval_id, outcome=approval.outcome, message=approval.message)
            ),
        )
        if approval.outcome == "allowed-always":
            self._always.add((session, request.tool))
        return approval

    async def _decide(self, request: ApprovalRequest, log: SessionLog | None) -> Approval:
        ctx = request.context.ctx
        known = await ctx.waterfall(DECIDE, None, request)
        if known is not None:
            return known
        policy = self.policy(log)
        if policy == "never":
            return Approval("rejected")
        if policy == "auto-allow":
            return Approval("allowed-once")
        answer = await ctx.waterfall(ASK, None, request)
        return answer if answer is not None else Approval("unavailable")

    @staticmethod
    async def _append(request: ApprovalRequest, event: Event) -> None:
        agent = request.context.agent
        if agent is not None:
            await agent.append(event)
        elif request.context.log is not None:
            request.context.log.append(event)

    # ------------------------------------------------------------------ slash commands

    async def command(self, agent: Any, name: str, args: str) -> CommandOutcome:
        """Run slash command `name` with `args` (the raw text after the name) for `agent`, between its turns:
        `command/run`, the knob events it changes, then `command/done`."""
        log: SessionLog = agent.log
        command_id = log.ids.new_id("command")
        await agent.append(
            CommandRun(
                data=CommandRunData(
                    command_id=command_id, name=name, args=args, source=CommandSource(kind="user")
                )
            )
        )
        outcome = await self._run(agent, name, args.strip())
        await agent.append(
            CommandDone(data=CommandDoneData(command_id=command_id, kind=outcome.kind, text=outcome.text))
        )
        await log.flush()
        return outcome

    async def _run(self, agent: Any, name: str, value: str) -> CommandOutcome:
        knobs = self.knobs(agent.log)
        if name == "permission":
            names = list(PRESETS)
            if not value:
                return CommandOutcome(
                    "success", f"Permission preset: {knobs.preset or 'none'} (available: {_listing(names)})."
                )
            preset = PRESETS.get(value)
            if preset is None:
                return CommandOutcome("error", f'unknown preset "{value}" (available: {_listing(names)})')
            await agent.append(PermissionPreset(data=PermissionPresetData(preset=value)))
            await self._set_sandbox(agent, knobs, preset.sandbox, force=True)
            await self._set_policy(agent, knobs, preset.approval, force=True)
            return CommandOutcome("success", f"Permission preset: {value}.")
        if name == "approval":
            if not value:
                return CommandOutcome(
                    "success", f"Approval policy: {self.policy(agent.log)} (available: {_listing(POLICIES)})."
                )
            if value not in POLICIES:
                return CommandOutcome(
                    "error", f'unknown approval policy "{value}" (available: {_listing(POLICIES)})'
                )
            await self._set_policy(agent, knobs, value, force=True)
            return CommandOutcome("success", f"Approval policy: {value}.")
        if name == "sandbox":
            if not value:
                return CommandOutcome(
                    "success",
                    f"Sandbox mode: {knobs.sandbox or 'as configured'} (available: {_listing(SANDBOX_MODES)}).",
                )
            if value not in SANDBOX_MODES:
                return CommandOutcome(
                    "error", f'unknown sandbox mode "{value}" (available: {_listing(SANDBOX_MODES)})'
                )
            await self._set_sandbox(agent, knobs, value, force=True)
            return CommandOutcome("success", f"Sandbox mode: {value}.")
        return CommandOutcome(
            "error", f'unknown command "/{name}" (available: {_listing(["/" + c for c in COMMANDS])})'
        )

    @staticmethod
    async def _set_sandbox(agent: Any, knobs: Knobs, mode: str, *, force: bool) -> None:
        if force or knobs.sandbox != mode:
            await agent.append(SandboxMode(data=SandboxModeData(mode=mode)))

    @staticmethod
    async def _set_policy(agent: Any, knobs: Knobs, policy: str, *, force: bool) -> None:
        if force or knobs.policy != policy:
            await agent.append(ApprovalPolicy(data=ApprovalPolicyData(policy=policy)))


INTERACTION = ServiceKey[Interaction]("interaction")
