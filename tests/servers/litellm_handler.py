"""The model behind the LiteLLM proxy in the tests: a LiteLLM `CustomLLM` whose answer is chosen by the model name
(`dshtest/<scenario>`), streamed as LiteLLM's own chunk objects so the proxy serialises them as it does any
provider's. Loaded by the proxy process (never by pytest): see tests/servers/litellm_proxy.py.

Scenarios: `text`, `reasoning`, `tools` (a bash call, `finish_reason: stop` as some servers send it, then an answer
once the tool result is in), `parallel` (two calls whose fragments interleave), `cached` (usage with cache hits:
the proxy 1.108 replaces a custom handler's usage by its own count, so the cache hits do not reach the client),
`rate-limit`, `auth`, `server`, `overflow` (partial text, then the upstream fails mid-stream), `flaky` (the first
call of a prompt fails mid-stream with a rate limit, the next answers), `slow` (pauses between deltas), `stall`
(one delta, then nothing for a minute).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import litellm
from litellm import CustomLLM
from litellm.types.utils import Delta, ModelResponseStream, StreamingChoices, Usage

_calls: Counter[str] = Counter()


def _chunk(*, finish: str | None = None, usage: Usage | None = None, **delta: Any) -> ModelResponseStream:
    choice = StreamingChoices(index=0, delta=Delta(**delta), finish_reason=finish)
    chunk = ModelResponseStream(choices=[choice])
    if usage is not None:
        chunk.usage = usage
    return chunk


def _call(index: int, arguments: str, *, id: str | None = None, name: str | None = None) -> dict[str, Any]:
    function: dict[str, Any] = {"arguments": arguments}
    if name is not None:
        function["name"] = name
    call: dict[str, Any] = {"index": index, "type": "function", "function": function}
    if id is not None:
        call["id"] = id
    return call


def _last_text(messages: list[dict[str, Any]]) -> str:
    content = messages[-1].get("content") if messages else ""
    return content if isinstance(content, str) else str(content)


def _upstream_error(kind: str) -> Exception:
    where = {"llm_provider": "dshtest", "model": kind}
    error: Exception
    if kind in ("rate-limit", "flaky"):
        error = litellm.RateLimitError(message="upstream says slow down\n\ntry again in a moment", **where)
    elif kind == "auth":
        error = litellm.AuthenticationError(message="invalid api key\n\nfor the upstream", **where)
    elif kind == "overflow":
        error = litellm.ContextWindowExceededError(
            message="This model's maximum context length is 8192 tokens", **where
        )
    else:
        error = litellm.InternalServerError(message="upstream fell over", **where)
    return error


async def _scenario(kind: str, messages: list[dict[str, Any]]) -> AsyncIterator[ModelResponseStream | float]:
    usage = Usage(prompt_tokens=120, completion_tokens=8, total_tokens=128)
    if kind == "text":
        yield _chunk(content="hello from ")
        yield _chunk(content="the proxy")
        yield _chunk(finish="stop", usage=usage)
    elif kind == "reasoning":
        yield _chunk(reasoning_content="thinking it ")
        yield _chunk(reasoning_content="over")
        yield _chunk(content="thought through")
        yield _chunk(finish="stop", usage=usage)
    elif kind == "tools":
        if messages and messages[-1].get("role") == "tool":
            yield _chunk(content="the tool said: " + _last_text(messages).strip())
            yield _chunk(finish="stop", usage=usage)
            return
        yield _chunk(content="let me run it")
        yield _chunk(tool_calls=[_call(0, "", id="call_bash_1", name="bash")])
        yield _chunk(tool_calls=[_call(0, '{"command": "echo from-')])
        yield _chunk(tool_calls=[_call(0, 'bash", "description": "say it"}')])
        yield _chunk(finish="stop", usage=usage)  # as several servers do, though the message holds a call
    elif kind == "parallel":
        yield _chunk(
            tool_calls=[_call(0, "", id="call_a", name="bash"), _call(1, "", id="call_b", name="bash")]
        )
        yield _chunk(tool_calls=[_call(1, '{"command": "echo b", '), _call(0, '{"command": "echo a", ')])
        yield _chunk(tool_calls=[_call(0, '"description": "a"}'), _call(1, '"description": "b"}')])
        yield _chunk(finish="tool_calls", usage=usage)
    elif kind == "cached":
        cached = Usage(
            prompt_tokens=1000,
            completion_tokens=20,
            total_tokens=1020,
            prompt_tokens_details={"cached_tokens": 768},
        )
        yield _chunk(content="cheap answer")
        yield _chunk(finish="stop", usage=cached)
    elif kind in ("rate-limit", "auth", "server", "overflow") or (
        kind == "flaky" and _calls[_last_text(messages)] == 1
    ):
        yield _chunk(content="half an ans")
        raise _upstream_error(kind)
    elif kind == "flaky":
        yield _chunk(content="whole answer")
        yield _chunk(finish="stop", usage=usage)
    elif kind == "slow":
        for word in ("slow ", "but ", "sure"):
            yield _chunk(content=word)
            yield 0.3
        yield _chunk(finish="stop", usage=usage)
    elif kind == "stall":
        yield _chunk(content="and then")
        yield 60.0
        yield _chunk(finish="stop", usage=usage)
    else:
        raise litellm.BadRequestError(message=f"no scenario {kind!r}", llm_provider="dshtest", model=kind)


class ScriptedModel(CustomLLM):  # type: ignore[misc]  # litellm ships no type information
    async def astreaming(self, model: str, messages: list[dict[str, Any]], *args: Any, **kwargs: Any) -> Any:
        kind = model.rsplit("/", 1)[-1]
        _calls[_last_text(messages)] += 1
        async for step in _scenario(kind, messages):
            if isinstance(step, float):
                await asyncio.sleep(step)
            else:
                yield step


handler = ScriptedModel()
