"""The `llm_openai` plugin: registers one `OpenAICompatibleAdapter` per configured route with `LlmRuntime`."""

from __future__ import annotations

from dsh.runtime.kernel import Context, Plugin
from dsh.runtime.llm import LLM
from dsh.runtime.tools import TOOL_ENV

from ._adapter import OpenAICompatibleAdapter
from ._config import Config

__all__ = ["plugin"]


def _apply(ctx: Context, config: Config) -> None:
    llm = ctx.get(LLM)
    # The routes' keys are secrets: tool subprocesses (bash) never see them. Without the tool environment service
    # (dsh.runtime.tools loaded later, or not at all) the default credential patterns still withhold *_API_KEY names.
    secrets = ctx.get(TOOL_ENV) if ctx.has(TOOL_ENV) else None
    for route in config.providers:
        llm.register(route.id, OpenAICompatibleAdapter(route))
        if secrets is not None and route.api_key_env is not None:
            secrets.withhold(ctx, route.api_key_env)


plugin = Plugin(
    name="llm_openai",
    apply=_apply,
    config=Config,
    needs=(LLM,),
    description="OpenAI-compatible chat-completions streaming adapter; DeepSeek is the default route",
)
