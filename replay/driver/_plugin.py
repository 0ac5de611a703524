"""The `replay` plugin: loads a recording and registers a `ReplayAdapter` with `LlmRuntime` under the provider ids
the recording was made with, so a deployment replays it by swapping its live adapter plugin for this one; and
provides the recording's inbox gate, which admits queued input where the recording spliced it, and the clock retry
waits on (`RETRY_CLOCK`), on which no wait takes time."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import anyio
import msgspec

from dsh.plugins.retry import RETRY_CLOCK
from dsh.runtime.agent import INBOX_GATE
from dsh.runtime.kernel import Context, Plugin, ServiceKey
from dsh.runtime.llm import LLM, LlmAdapter
from dsh.runtime.session import STORE

from ..script._recording import load_recording
from ._adapter import ReplayAdapter
from ._gate import RecordedInbox
from ._hitl import HookMode, serve_recorded_approvals, serve_recorded_hooks
from ._tools import ToolMode, serve_recorded_tools

__all__ = [
    "DEFAULT_PROVIDER",
    "HELD_INPUT",
    "NO_WAIT",
    "REPLAY",
    "HeldInput",
    "NoWait",
    "ReplayConfig",
    "apply_replay",
    "plugin",
]

DEFAULT_PROVIDER = "replay"


class ReplayConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """`log`: a JSONL log or a scenario directory (`session.jsonl`, `session.N.jsonl`, `override.json`).
    `children`: more child logs. `override`: an override file (for a directory: instead of its `override.json`).
    `providers`: the provider ids to serve; empty (the default) serves every provider id the recording's
    `request/header` events name, or `replay` when they name none. `routes`: more provider ids to serve it under as
    well (a deployment's own routes, whatever they are called). `pace_ms`: a delay before each chunk.
    `tools`: per tool name, `live` (run it) or `recorded` (serve the recording's result); a tool not named is
    recorded when its definition is not hermetic (see replay/driver/_tools.py). `hooks`: `live` (the project's hooks run,
    the default) or `recorded` (each hook run is served its recorded outcome; see replay/driver/_hitl.py). Approvals are
    always decided by the recording.
    `workspace`: a directory copied into the primary live session's cwd when that cwd is empty (or missing), before
    its first model call, so the recording's tools find the files they found (`--replay SCENARIO` sets it to the
    scenario's `workspace/`); a cwd holding anything is left as it is."""

    log: str
    children: tuple[str, ...] = ()
    override: str | None = None
    providers: tuple[str, ...] = ()
    routes: tuple[str, ...] = ()
    pace_ms: float = 0.0
    tools: dict[str, ToolMode] = msgspec.field(default_factory=dict)
    workspace: str | None = None
    hooks: HookMode = "live"

    def __post_init__(self) -> None:
        if not self.log:
            raise ValueError("log must name a JSONL log or a scenario directory")
        if not self.pace_ms >= 0:
            raise ValueError(f"pace_ms must be >= 0, got {self.pace_ms}")
        if any(not provider for provider in self.providers):
            raise ValueError("a provider id must be non-empty")
        if len(set(self.providers)) != len(self.providers):
            raise ValueError(f"providers lists an id twice: {list(self.providers)}")


REPLAY = ServiceKey[ReplayAdapter]("replay")
"""The loaded replay adapter: a driver reads `ctx.get(REPLAY).assert_consumed()` at the end of a run."""


class HeldInput(Protocol):
    """The replay's inbox gate, seen by a driver: it holds each queued input until the position its recording spliced
    it at, and says at the end of a run what it never admitted."""

    def assert_consumed(self) -> None:
        """Raise `ReplayMismatch` for the first recorded input never queued, or queued where it was not recorded."""
        ...


HELD_INPUT = ServiceKey[HeldInput]("replay/held-input")
"""The replay plugin's inbox gate (the `INBOX_GATE` it provides), for a driver: present exactly when queued input is
held to its recorded position (steering is then queued as soon as typed, and waits there), and asked at the end."""


class NoWait:
    """The `RetryClock` of a replay, where time is not real: the retry policy decides and logs its wait
    (`llm/retry`'s `delayMs`) as the deployment configures it, and the wait is over at once (a checkpoint, so a
    cancelled turn still stops there)."""

    async def wait(self, ms: int) -> None:
        await anyio.lowlevel.checkpoint()


NO_WAIT = NoWait()


def apply_replay(
    ctx: Context, config: ReplayConfig, serve: Callable[[ReplayAdapter], LlmAdapter] | None = None
) -> None:
    """The replay plugin's `apply`; `serve` wraps the replay adapter in the adapter registered for the providers
    (wire replay serves the recording through the real transport)."""
    recording = load_recording(config.log, children=config.children, override=config.override)
    adapter = ReplayAdapter(
        recording, sessions=ctx.get(STORE), pace_ms=config.pace_ms, workspace=config.workspace
    )
    llm = ctx.get(LLM)
    served = config.providers or recording.providers or (DEFAULT_PROVIDER,)
    transport: LlmAdapter = adapter if serve is None else serve(adapter)
    for provider in dict.fromkeys((*served, *config.routes)):
        llm.register(provider, transport)
    ctx.provide(REPLAY, adapter)
    ctx.provide(RETRY_CLOCK, NO_WAIT)
    serve_recorded_tools(ctx, adapter, config.tools)
    serve_recorded_approvals(ctx, adapter)
    if config.hooks == "recorded":
        serve_recorded_hooks(ctx, adapter)
    logs = [(script.log.name, script.log.id, script.deliveries) for script in recording.scripts]
    gate = RecordedInbox(logs, adapter.bound_log)
    ctx.provide(INBOX_GATE, gate)
    ctx.provide(HELD_INPUT, gate)


def _apply(ctx: Context, config: ReplayConfig) -> None:
    apply_replay(ctx, config)


plugin = Plugin(
    name="replay",
    apply=_apply,
    config=ReplayConfig,
    needs=(LLM, STORE),
    provides=(REPLAY, INBOX_GATE, HELD_INPUT, RETRY_CLOCK),
    description="replays a recorded session's model calls: registers the replay adapter under its provider ids",
)
