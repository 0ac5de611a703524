"""The `llm_openai` plugin: strict config, one adapter per route, DeepSeek by default, undone on unload."""

from __future__ import annotations

from contextlib import aclosing

import pytest

from dsh.plugins.llm_openai import DEEPSEEK, Config, OpenAICompatibleAdapter
from dsh.plugins.llm_openai import plugin as openai_plugin
from dsh.runtime.kernel import ConfigError, Context
from dsh.runtime.llm import (
    LLM,
    Finish,
    FinishError,
    LlmFailure,
    LlmRequest,
    LlmRuntime,
    MessageId,
    TextBlock,
    UserMessage,
)
from dsh.runtime.llm import plugin as llm_plugin


def loaded_context() -> Context:
    ctx = Context()
    ctx.plugin(llm_plugin)
    return ctx


def test_the_default_route_is_deepseek() -> None:
    ctx = loaded_context()
    ctx.plugin(openai_plugin)
    adapter = ctx.get(LLM).adapter("deepseek-official")
    assert isinstance(adapter, OpenAICompatibleAdapter)
    assert adapter.route == DEEPSEEK
    assert adapter.endpoint == "https://api.deepseek.com/chat/completions"
    assert DEEPSEEK.api_key_env == "DEEPSEEK_API_KEY"


def test_configured_routes_register_and_unloading_removes_them() -> None:
    ctx = loaded_context()
    loaded = ctx.plugin(
        openai_plugin,
        {
            "providers": [
                {"id": "local", "base_url": "http://127.0.0.1:8000/v1", "models": ["qwen"]},
                {"id": "ds", "base_url": "https://api.deepseek.com", "api_key_env": "DEEPSEEK_API_KEY"},
            ]
        },
    )
    assert ctx.get(LLM).providers() == ("ds", "local")
    loaded.unload()
    assert ctx.get(LLM).providers() == ()


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"providers": [{"id": "a"}]}, "Object missing required field `base_url`"),
        ({"providers": [{"id": "a", "base_url": "ftp://x"}]}, "must start with http:// or https://"),
        (
            {"providers": [{"id": "a", "base_url": "http://x", "api_key_env": "NOT-A-NAME"}]},
            "not an environment",
        ),
        (
            {"providers": [{"id": "a", "base_url": "http://x", "api_key": "sk-1"}]},
            "unknown key `api_key` (did you mean `api_key_env`?)",
        ),
        (
            {"providers": [{"id": "a", "base_url": "http://x", "headers": {"Authorization": "Bearer x"}}]},
            "through api_key_env",
        ),
        ({"providers": [{"id": "a", "base_url": "http://x", "idle_timeout": 0}]}, "must be positive"),
        (
            {"providers": [{"id": "a", "base_url": "http://x"}, {"id": "a", "base_url": "http://y"}]},
            'provider id "a" is configured twice',
        ),
        (
            {"providers": [{"id": "a", "base_url": "http://x", "context_window": 0}]},
            "context_window must be a positive number of tokens, got 0",
        ),
        (
            {"providers": [{"id": "a", "base_url": "http://x", "context_windows": {"m": -1}}]},
            "context_windows.m must be a positive number of tokens",
        ),
        (
            {
                "providers": [
                    {"id": "a", "base_url": "http://x", "models": ["m"], "context_windows": {"n": 8192}}
                ]
            },
            "context_windows names models the route does not serve: n; models: m",
        ),
    ],
)
def test_bad_config_is_refused_naming_the_plugin_and_the_problem(config: object, message: str) -> None:
    ctx = loaded_context()
    with pytest.raises(ConfigError, match='plugin "llm_openai"') as caught:
        ctx.plugin(openai_plugin, config)
    assert message in str(caught.value)
    assert ctx.get(LLM).providers() == ()


def test_the_plugin_needs_the_llm_service() -> None:
    with pytest.raises(Exception, match='needs service "llm"'):
        Context().plugin(openai_plugin)


def test_config_defaults() -> None:
    assert Config().providers == (DEEPSEEK,)


def test_routes_state_their_models_context_windows_through_the_runtime() -> None:
    ctx = loaded_context()
    ctx.plugin(
        openai_plugin,
        {
            "providers": [
                {"id": "deepseek-official", "base_url": "https://api.deepseek.com", "context_window": 128000},
                {
                    "id": "local",
                    "base_url": "http://127.0.0.1:8000/v1",
                    "models": ["small", "big"],
                    "context_window": 32768,
                    "context_windows": {"big": 131072},
                },
                {"id": "bare", "base_url": "http://127.0.0.1:8080/v1"},
            ]
        },
    )
    llm = ctx.get(LLM)
    assert llm.context_window("deepseek-official", "deepseek-v4-flash") == 128000
    assert llm.context_window("local", "small") == 32768
    assert llm.context_window("local", "big") == 131072
    assert llm.context_window("bare", "anything") is None


def test_the_deepseek_route_states_deepseeks_windows() -> None:
    assert {model: DEEPSEEK.window(model) for model in DEEPSEEK.models} == {
        "deepseek-v4-flash": 128000,
        "deepseek-chat": 128000,
        "deepseek-reasoner": 128000,
    }


@pytest.mark.anyio
async def test_without_deepseek_api_key_the_error_says_which_variable_to_set() -> None:
    llm = LlmRuntime()
    llm.register(DEEPSEEK.id, OpenAICompatibleAdapter(DEEPSEEK, env={}))
    request = LlmRequest(
        provider=DEEPSEEK.id,
        model="deepseek-v4-flash",
        messages=(UserMessage(id=MessageId("u"), content=(TextBlock("say hi"),)),),
    )
    async with aclosing(llm.stream(request)) as stream:
        chunks = [c async for c in stream]
    assert chunks == [
        Finish(
            reason=FinishError(
                LlmFailure(
                    message='provider "deepseek-official" needs an API key: set the environment variable DEEPSEEK_API_KEY',
                    code="MISSING_CREDENTIAL",
                )
            )
        )
    ]
