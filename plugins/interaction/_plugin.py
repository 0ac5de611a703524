"""The `interaction` plugin: loads the interaction service as the `approval` service the tool pipeline asks, and
states the session's approval policy to the model as the runtime context `approval:policy`."""

from __future__ import annotations

from typing import Any

import msgspec

from dsh.runtime.agent import SLASH_COMMAND, CommandReply, SlashCommand
from dsh.runtime.kernel import Context, Plugin
from dsh.runtime.prompt import SYSTEM_PROMPT, AssembleContext, PromptContext
from dsh.runtime.tools import APPROVER, TOOLS

from ._ask_user import ask_user_tool
from ._policy import APPROVAL_CONTEXT, POLICIES, policy_text
from ._service import COMMANDS, INTERACTION, Interaction

__all__ = ["InteractionConfig", "plugin"]


class InteractionConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """`policy`: the approval policy of a session whose log sets none (`ask`, `never`, `auto-allow`).
    `ask_user_question`: whether the model gets the `ask_user_question` tool (needs `tools`)."""

    policy: str = "ask"
    ask_user_question: bool = False

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            valid = ", ".join(f'"{p}"' for p in POLICIES)
            raise msgspec.ValidationError(f'`policy` is "{self.policy}"; the approval policies are {valid}')


def _apply(ctx: Context, config: InteractionConfig) -> None:
    service = Interaction(ctx, policy=config.policy)
    ctx.provide(INTERACTION, service)
    ctx.provide(APPROVER, service)

    async def command(value: CommandReply | None, call: SlashCommand, next_: Any) -> CommandReply | None:
        if call.name not in COMMANDS:
            return await next_(value)  # type: ignore[no-any-return]
        outcome = await service.command(call.agent, call.name, call.args)
        return CommandReply(outcome.kind, outcome.text)

    ctx.on(SLASH_COMMAND, command)
    if config.ask_user_question:
        ctx.get(TOOLS).register(ask_user_tool())
    if ctx.has(SYSTEM_PROMPT):

        def stated(context: AssembleContext) -> str:
            agent = context.agent
            return policy_text(service.policy(getattr(agent, "log", None)))

        ctx.get(SYSTEM_PROMPT).context(PromptContext(APPROVAL_CONTEXT, 115, stated))


plugin = Plugin(
    name="interaction",
    apply=_apply,
    config=InteractionConfig,
    provides=(INTERACTION, APPROVER),
    description="approvals by the session's policy or a person, permission presets, sandbox modes and the slash "
    "commands that set them; the approval:policy context",
)
