"""The `llm_openai` plugin: registers one `OpenAICompatibleAdapter` per configured route with `LlmRuntime`; and
`wire`, its declaration that it speaks chat-completions SSE (how replay finds it and points it at a local server)."""

from __future__ import annotations

import msgspec

from dsh.runtime.kernel import Context, Plugin
from dsh.runtime.llm import LLM, OPENAI_CHAT, LlmAdapter, WireTransport, declare_wire_transport
from dsh.runtime.tools import TOOL_ENV

from ._adapter import OpenAICompatibleAdapter
from ._config import Config, ProviderConfig

__all__ = ["plugin", "wire"]


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


def _routes(config: Config) -> tuple[str, ...]:
    return tuple(route.id for route in config.providers)


def _pointed_at(config: Config, provider: str, base_url: str, api_key: str) -> LlmAdapter:
    route = next((r for r in config.providers if r.id == provider), None)
    if route is None:
        route = config.providers[0] if config.providers else ProviderConfig(id=provider, base_url=base_url)
    # the recorded model is served whatever the route lists (its `models` guard a live deployment against a typo)
    route = msgspec.structs.replace(route, id=provider, base_url=base_url, models=(), context_windows={})
    env = {} if route.api_key_env is None else {route.api_key_env: api_key}
    return OpenAICompatibleAdapter(route, env=env)


def _key_env(config: Config, provider: str) -> str | None:
    return next((route.api_key_env for route in config.providers if route.id == provider), None)


wire = declare_wire_transport(WireTransport(plugin, OPENAI_CHAT, _routes, _pointed_at, _key_env))
