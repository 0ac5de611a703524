"""Continuable subagents: a child that runs in the background of the agent that started it and stays available for
more input. The subagent tool in `background_mode: continuable` starts one and returns its durable id at once; the
child reports through its own `report` tool (a `subagent-report` message queued as steering in the parent's inbox:
it enters the parent's next step); each of its turns settles with a `subagent-settled` notice (a prompt for the
parent's next turn, which wakes the parent when idle); `send_message` queues more input for it, which becomes its
next turn, continued from its own log. Children are background work of their parent agent: they end when it closes."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import anyio
from anyio.abc import TaskStatus

from dsh.plugins.subagent import SubagentError, SubagentRequest, SubagentView
from dsh.runtime.agent import Agent
from dsh.runtime.llm import (
    AssistantMessage,
    SubagentReportSource,
    SubagentSettledSource,
    TextBlock,
    UserBlock,
)
from dsh.runtime.session import TurnEndData
from dsh.runtime.tools import TOOLS, Tool, ToolContext, ToolResult

__all__ = [
    "REPORT_TOOL",
    "SEND_TOOL",
    "Children",
    "report_tool",
    "send_message_tool",
    "settled_notice",
    "start_continuable",
]

log = logging.getLogger("dsh.tool_subagent")

REPORT_TOOL = "report"
SEND_TOOL = "send_message"


class Children:
    """The live continuable children started through one subagent tool, by child id, with their parent's id."""

    def __init__(self) -> None:
        self._live: dict[str, tuple[str, Agent]] = {}

    def add(self, parent: Agent, child: Agent) -> Callable[[], None]:
        self._live[child.id] = (parent.id, child)

        def forget() -> None:
            self._live.pop(child.id, None)

        return forget

    def of(self, parent: Agent, child_id: str) -> Agent | None:
        found = self._live.get(child_id)
        return found[1] if found is not None and found[0] == parent.id else None

    def ids(self, parent: Agent) -> list[str]:
        return [child_id for child_id, (parent_id, _) in self._live.items() if parent_id == parent.id]


def report_tool(parent: Agent, child: Agent) -> Tool:
    """The child's `report`: its content reaches the parent as steering, entering the parent's next step."""

    async def execute(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        output = arguments["output"]
        if not isinstance(output, str) or not output.strip():
            return ToolResult.error(
                "INVALID_ARGUMENTS", "report needs a non-empty `output`: what your parent needs"
            )
        message = await parent.queue(
            (TextBlock(f"Background subagent {child.id} reported:"), TextBlock(output)),
            target="next-step",
            source=SubagentReportSource(form="relay", sender_session_id=child.id),
        )
        return ToolResult(f"report accepted by the agent that started you as message {message.id}")

    return Tool(
        name=REPORT_TOOL,
        description=(
            "Report selected content to the agent that started you. Call it once before you finish, with a "
            "self-contained final result, and earlier for findings that change what that agent does next. That "
            "agent shares your workspace but does not receive your transcript, tool output or reasoning, so "
            "finishing your work is not itself a result. Reporting does not end your turn, and only the agent "
            "that started you receives it."
        ),
        parameters={
            "type": "object",
            "properties": {
                "output": {
                    "type": "string",
                    "description": "What the agent that started you needs: conclusions, and the shared paths involved.",
                }
            },
            "required": ["output"],
        },
        execute=execute,
    )


def settled_notice(child_id: str, end: TurnEndData | None, closing: str) -> tuple[str, tuple[UserBlock, ...]]:
    """The summary and content of the notice a settled turn of `child_id` sends its parent."""
    kind = "interrupted" if end is None else end.reason.kind
    if kind == "completed":
        summary = (
            f"Background subagent {child_id} finished and will do no further work unless you send it more."
        )
    else:
        summary = f"Background subagent {child_id} stopped ({kind}) and will do no further work unless you send it more."
    blocks: tuple[UserBlock, ...] = (TextBlock(summary),)
    if closing:
        blocks += (TextBlock("Its closing message:"), TextBlock(closing))
    return summary, blocks


def _closing(child: Agent) -> str:
    """The text of the child's last assistant message that has any (empty: it said nothing)."""
    for message in reversed(child.messages()):
        if isinstance(message, AssistantMessage):
            text = "".join(b.text for b in message.content if isinstance(b, TextBlock))
            if text:
                return text
    return ""


async def start_continuable(
    subagents: SubagentView, provider: str, request: SubagentRequest, children: Children
) -> str:
    """Start a continuable child in its parent's background and return its id once it is published. A start the
    service refuses raises `SubagentError` here; later failures are the child's own (logged, notice sent)."""
    parent = request.parent

    async def runner(*, task_status: TaskStatus[str]) -> None:
        started = False
        try:
            async with subagents.start(provider, request) as run:
                child = run.agent
                if child is None:
                    raise SubagentError(
                        f'subagent provider "{provider}" runs its child outside this process, so it cannot be '
                        "continued; use background_mode: one-shot for it",
                        code="UNSUPPORTED_CAPABILITY",
                    )
                child.ctx.get(TOOLS).register(report_tool(parent, child))
                forget = children.add(parent, child)
                try:
                    task_status.started(child.id)
                    started = True
                    await child.queue(request.prompt)
                    turn = 1
                    while True:
                        end = await child.wait_turn_end(turn)
                        summary, blocks = settled_notice(child.id, end, _closing(child))
                        await parent.queue(
                            blocks,
                            target="next-turn",
                            source=SubagentSettledSource(
                                form="notice", summary=summary, sender_session_id=child.id
                            ),
                        )
                        turn = child.log.state.last_turn + 1
                finally:
                    forget()
        except anyio.get_cancelled_exc_class():
            raise
        except Exception:
            if not started:
                raise  # the caller's tool call reports it
            # contained: a continuable child that breaks is its parent's information, never the parent's crash
            log.exception("continuable subagent of %s failed", parent.id)

    child_id: str = await parent.start_background(runner)
    return child_id


def send_message_tool(children: Children) -> Tool:
    """`send_message`: more input for a continuable child, which becomes its next turn."""

    async def execute(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        parent = context.agent
        if parent is None:
            return ToolResult.error("NO_CALLING_AGENT", f'the "{SEND_TOOL}" tool requires a calling agent')
        child_id, text = arguments["subagent_id"], arguments["message"]
        child = children.of(parent, child_id)
        if child is None:
            live = ", ".join(children.ids(parent)) or "none"
            return ToolResult.error(
                "NO_SUBAGENT",
                f'no background subagent "{child_id}" of this agent is running; the message was NOT delivered. '
                f"Running: {live}",
            )
        if not isinstance(text, str) or not text.strip():
            return ToolResult.error("INVALID_ARGUMENTS", "send_message needs a non-empty `message`")
        message = await child.queue(text)
        return ToolResult(f"message {message.id} delivered to subagent {child_id}; it becomes its next turn")

    return Tool(
        name=SEND_TOOL,
        description=(
            "Send a message to a background subagent by its subagent id, continuing the same conversation. It "
            "becomes the subagent's next turn: if it is still working, the message waits until its current turn "
            "finishes. No answer comes back from this call, only confirmation that the message was delivered; the "
            "subagent's notice arrives when that turn settles. A failure means the message was NOT delivered."
        ),
        parameters={
            "type": "object",
            "properties": {
                "subagent_id": {
                    "type": "string",
                    "description": "The subagent id returned when the background subagent was started.",
                },
                "message": {"type": "string", "description": "The message to deliver to the subagent."},
            },
            "required": ["subagent_id", "message"],
        },
        execute=execute,
    )
