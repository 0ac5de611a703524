"""The `dsh.runtime.prompt` plugin: its config, the harness identity text, and the two sections the service itself owns
(`harness:identity` at -100 and `deployment:persona` at 0), so they survive a swapped agent loop."""

from __future__ import annotations

import msgspec

from dsh.runtime.kernel import Context, Plugin

from ._service import SYSTEM_PROMPT, SystemPrompt, _Registry
from ._tool_order import check_tool_order
from ._types import PromptSection

__all__ = ["IDENTITY", "IDENTITY_SECTION", "PERSONA_SECTION", "PromptConfig", "plugin"]

IDENTITY = (
    "You are an AI agent running on dsh, an event-sourced agent runtime: everything you see and do in this "
    "session is recorded in its log."
)
"""The text of `harness:identity`, the first section of every prompt (unless config `identity: false`)."""

IDENTITY_SECTION = "harness:identity"
PERSONA_SECTION = "deployment:persona"


class PromptConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Config of `dsh.runtime.prompt`.

    - `persona`: the deployment's role and behaviour, a template (`{{model}}`...); section `deployment:persona`.
      The name stays reserved even when empty (an empty section is dropped at render).
    - `identity`: register `harness:identity` (the IDENTITY text at order -100).
    - `tool_order`: tool names in the order the model sees them, with exactly one `"<unlisted-tools>"` entry where
      every other tool goes (in name order). Unset: all tools in name order.
    """

    persona: str = ""
    identity: bool = True
    tool_order: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.tool_order is not None:
            check_tool_order(self.tool_order)


def _apply(ctx: Context, config: PromptConfig) -> None:
    service = SystemPrompt(_Registry(ctx, config.tool_order), ctx)
    ctx.provide(SYSTEM_PROMPT, service)
    if config.identity:
        service.section(PromptSection(IDENTITY_SECTION, -100, IDENTITY))
    service.section(PromptSection(PERSONA_SECTION, 0, config.persona))


plugin = Plugin(
    name="system-prompt",
    apply=_apply,
    config=PromptConfig,
    provides=(SYSTEM_PROMPT,),
    description="The system prompt: sections, runtime contexts, variables and tool providers; assemble and render.",
)
