"""The `instructions` plugin: workspace instructions (AGENTS.md, CLAUDE.md and their `.local.md` variants) enter the
conversation as `agent-instructions` user messages, the baseline with a step's input (`agent/step-input`) and what a
file tool's touch reveals (a nested directory's own file, an edited one) queued for the next step when the step
ends, as the original sends them."""

from __future__ import annotations

import json
import weakref
from dataclasses import dataclass, field
from pathlib import Path

from dsh.runtime.agent import EVENT, STEP_INPUT, STEP_PREVIEW, Agent, AgentEvent, StepInput, StepPreview
from dsh.runtime.kernel import Context, Next, Plugin
from dsh.runtime.llm import MessageId, ToolResultBlock, UserMessage
from dsh.runtime.session import StepEnd, ToolCall, ToolResultEvent, TurnEnd

from ._compose import Prepared, compose
from ._config import Config

__all__ = ["TOUCHING_TOOLS", "plugin"]

TOUCHING_TOOLS = frozenset({"read", "write", "edit"})
"""The tools whose `file_path` reveals instructions (as the original's)."""


@dataclass
class _AgentState:
    prepared: Prepared | None = None
    calls: dict[str, str] = field(default_factory=dict)  # call id -> the file path it touches
    touched: list[str] = field(default_factory=list)


def _touched_path(name: str, arguments: str) -> str | None:
    if name not in TOUCHING_TOOLS:
        return None
    try:
        decoded = json.loads(arguments)
    except ValueError:
        return None
    path = decoded.get("file_path") if isinstance(decoded, dict) else None
    if not isinstance(path, str) or not path.strip():
        return None
    return path.strip()


class Instructions:
    """Per agent: the baseline last prepared and the paths touched in the open step."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self._agents: weakref.WeakKeyDictionary[Agent, _AgentState] = weakref.WeakKeyDictionary()

    def _state(self, agent: Agent) -> _AgentState:
        state = self._agents.get(agent)
        if state is None:
            state = self._agents[agent] = _AgentState()
        return state

    async def on_preview(
        self, added: tuple[UserMessage, ...], preview: StepPreview, next_: Next[tuple[UserMessage, ...]]
    ) -> tuple[UserMessage, ...]:
        """What the next step would add (for `dsh prompt` and `/prompt`), remembering nothing."""
        added = await next_(added)
        if preview.cwd is None:
            return added
        composed, _ = compose(self.config, Path(preview.cwd), preview.messages, added)
        if composed is None:
            return added
        return (
            *added,
            UserMessage(id=MessageId("preview"), content=composed.content, source=composed.source),
        )

    async def on_step_input(
        self, added: tuple[UserMessage, ...], info: StepInput, next_: Next[tuple[UserMessage, ...]]
    ) -> tuple[UserMessage, ...]:
        added = await next_(added)
        agent = info.agent
        if agent.cwd is None:
            return added
        state = self._state(agent)
        composed, state.prepared = compose(
            self.config, Path(agent.cwd), agent.messages(), (*info.claimed, *added), prepared=state.prepared
        )
        if composed is None:
            return added
        message = UserMessage(
            id=MessageId(agent.log.ids.new_id("message")), content=composed.content, source=composed.source
        )
        return (*added, message)

    async def on_event(self, event: AgentEvent) -> None:
        stored = event.event
        if stored.type not in (ToolCall.TAG, ToolResultEvent.TAG, StepEnd.TAG, TurnEnd.TAG):
            return
        agent = event.agent
        view = stored.view()
        state = self._state(agent)
        if isinstance(view, ToolCall):
            path = _touched_path(view.data.name, view.data.arguments)
            if path is not None:
                state.calls[view.data.call_id] = path
        elif isinstance(view, ToolResultEvent):
            blocks = [b for b in view.data.message.content if isinstance(b, ToolResultBlock)]
            for block in blocks:
                path = state.calls.pop(block.tool_call_id, None)
                if path is not None and not block.is_error:
                    state.touched.append(path)
        elif isinstance(view, StepEnd | TurnEnd):
            touched, state.touched = state.touched, []
            state.calls.clear()
            if not touched or agent.cwd is None:
                return
            composed, state.prepared = compose(
                self.config, Path(agent.cwd), agent.messages(), (), touched=touched, prepared=state.prepared
            )
            if composed is not None:
                # queued by the agent for itself at this step's end: it enters the next step (or the next turn)
                await agent.queue(composed.content, target="next-step", source=composed.source, inline=True)


def _apply(ctx: Context, config: Config) -> None:
    service = Instructions(config)
    ctx.on(STEP_INPUT, service.on_step_input)
    ctx.on(STEP_PREVIEW, service.on_preview)
    ctx.on(EVENT, service.on_event)


plugin = Plugin(
    name="instructions",
    apply=_apply,
    config=Config,
    description="AGENTS.md / CLAUDE.md workspace instructions as agent-instructions user messages",
)
