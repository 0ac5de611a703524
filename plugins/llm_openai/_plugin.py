"""The `llm_openai` plugin: registers one `OpenAICompatibleAdapter` per configured route with `LlmRuntime`."""

from __future__ import annotations

from runtime.kernel import Context, Plugin
from runtime.llm import LLM

from ._adapter import OpenAICompatibleAdapter
from ._config import Config

__all__ = ["plugin"]


def _apply(ctx: Context, config: Config) -> None:
    llm = ctx.get(LLM)
    for route in config.providers:
        llm.register(route.id, OpenAICompatibleAdapter(route))


plugin = Plugin(
    name="llm_openai",
    apply=_apply,
    config=Config,
    needs=(LLM,),
    description="OpenAI-compatible chat-completions streaming adapter; DeepSeek is the default route",
)
