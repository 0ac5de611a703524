"""Builders for chat-completions stream chunks, and a runner that streams one request through LlmRuntime."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import aclosing
from typing import Any

from dsh.plugins.llm_openai import OpenAICompatibleAdapter, ProviderConfig
from dsh.runtime.llm import LlmRequest, LlmRuntime, MessageId, StreamChunk, TextBlock, UserMessage

KEY = "sk-test-SECRET-0123456789"
ENV = {"TEST_KEY": KEY}


def wire(
    *,
    content: str | None = None,
    reasoning: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    finish: str | None = None,
    usage: dict[str, Any] | None = None,
    no_choices: bool = False,
) -> dict[str, Any]:
    """One DeepSeek-style `chat.completion.chunk`."""
    delta: dict[str, Any] = {}
    if content is not None:
        delta["content"] = content
    if reasoning is not None:
        delta["reasoning_content"] = reasoning
    if tool_calls is not None:
        delta["tool_calls"] = tool_calls
    chunk: dict[str, Any] = {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [] if no_choices else [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if usage is not None:
        chunk["usage"] = usage
    return chunk


def call(index: int, arguments: str, *, id: str | None = None, name: str | None = None) -> dict[str, Any]:
    """One tool-call delta; id and name only when given (DeepSeek sends them on the first delta only)."""
    function: dict[str, Any] = {"arguments": arguments}
    if name is not None:
        function["name"] = name
    delta: dict[str, Any] = {"index": index, "function": function}
    if id is not None:
        delta["id"] = id
        delta["type"] = "function"
    return delta


def usage(
    prompt: int, completion: int, *, hit: int | None = None, reasoning: int | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if hit is not None:
        out["prompt_cache_hit_tokens"] = hit
        out["prompt_cache_miss_tokens"] = prompt - hit
    if reasoning is not None:
        out["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    return out


def hello(provider: str = "test", model: str = "m") -> LlmRequest:
    return LlmRequest(
        provider=provider,
        model=model,
        messages=(UserMessage(id=MessageId("u1"), content=(TextBlock("hi"),)),),
    )


def route(base_url: str, **overrides: Any) -> ProviderConfig:
    settings: dict[str, Any] = {
        "id": "test",
        "base_url": base_url,
        "api_key_env": "TEST_KEY",
        "idle_timeout": 5.0,
    }
    settings.update(overrides)
    return ProviderConfig(**settings)


async def collect(
    base_url: str,
    request: LlmRequest | None = None,
    *,
    env: Mapping[str, str] = ENV,
    now: float = 0.0,
    **overrides: Any,
) -> list[StreamChunk]:
    llm = LlmRuntime()
    llm.register("test", OpenAICompatibleAdapter(route(base_url, **overrides), env=env, now=lambda: now))
    async with aclosing(llm.stream(request or hello())) as stream:
        return [chunk async for chunk in stream]
