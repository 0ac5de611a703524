"""A host for compaction tests: the agent-loop test host with the compaction plugin loaded, a tool that returns
large deterministic output, and a model that reports the meter's own estimate as its usage (so a calibrated meter
measures requests exactly as the deterministic meter does)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec

from dsh.plugins import compaction
from dsh.runtime.kernel import Context
from dsh.runtime.llm import LlmRequest, StreamChunk, TokenUsage, UsageChunk
from dsh.runtime.session import STORE, SessionStoreProtocol
from dsh.runtime.tools import Tool, ToolContext, ToolResult
from tests.runtime.agent.harness import ScriptedAdapter, Step, host

METER = compaction.TokenMeter()


def blob_tool() -> Tool:
    """`blob {size, tag?}`: returns `tag` and then `size` characters of filler (never the same twice in a row)."""

    async def execute(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        tag = str(arguments.get("tag", "blob"))
        size = int(arguments["size"])
        filler = (f"{tag} " * (size // (len(tag) + 1) + 1))[:size]
        return ToolResult(text=filler, meta={"size": size})

    return Tool(
        name="blob",
        description="Return `size` characters of output.",
        parameters={
            "type": "object",
            "properties": {"size": {"type": "integer"}, "tag": {"type": "string"}},
            "required": ["size"],
        },
        execute=execute,
    )


def estimate(request: LlmRequest) -> int:
    """The deterministic meter's estimate of a request, as sent."""
    return METER.request(system=request.system, tools=request.tools, messages=request.messages)


def with_usage(chunks: Sequence[StreamChunk], request: LlmRequest) -> list[StreamChunk]:
    """`chunks` with their usage replaced by the meter's estimate of `request`."""
    usage = UsageChunk(TokenUsage(input_tokens=estimate(request), output_tokens=5))
    return [usage if isinstance(chunk, UsageChunk) else chunk for chunk in chunks]


class MeteredModel:
    """Answers every request with `answer(request)`, reporting the meter's estimate of the request as usage."""

    def __init__(self, answer: Callable[[LlmRequest], Sequence[StreamChunk]]) -> None:
        self.answer = answer
        self.requests: list[LlmRequest] = []

    async def stream(self, request: LlmRequest) -> AsyncIterator[StreamChunk]:
        self.requests.append(request)
        for chunk in with_usage(self.answer(request), request):
            yield chunk


class MeteredScript(ScriptedAdapter):
    """A `ScriptedAdapter` whose usage chunks report `factor` times the meter's estimate of the request (a tenth of
    it as cache reads, to check that both count as sent). `window` is the context window it states (None: unknown)."""

    def __init__(self, steps: Sequence[Step] = (), *, factor: int = 1, window: int | None = None) -> None:
        super().__init__(steps, window=window)
        self.factor = factor
        self.sent: list[int] = []

    async def stream(self, request: LlmRequest) -> AsyncIterator[StreamChunk]:
        sent = self.factor * estimate(request)
        self.sent.append(sent)
        cached = sent // 10
        async for chunk in super().stream(request):
            if isinstance(chunk, UsageChunk):
                usage = TokenUsage(
                    input_tokens=sent - cached,
                    output_tokens=chunk.usage.output_tokens,
                    cache_read_tokens=cached,
                )
                chunk = UsageChunk(usage)
            yield chunk


@contextmanager
def compaction_host(
    tmp_path: Path,
    adapter: ScriptedAdapter | MeteredModel,
    config: compaction.Config,
    *,
    tool_list: Sequence[Tool] = (),
) -> Iterator[Context]:
    with host(tmp_path, adapter, tool_list=tool_list) as ctx:
        ctx.plugin(compaction.plugin, config)
        yield ctx


def data(store: SessionStoreProtocol, session_id: str, event_type: str) -> list[dict[str, Any]]:
    """The data of every `event_type` event of a session, decoded."""
    return [msgspec.json.decode(e.data) for e in store.events(session_id, types=(event_type,))]


__all__ = [
    "METER",
    "STORE",
    "MeteredModel",
    "MeteredScript",
    "blob_tool",
    "compaction_host",
    "data",
    "estimate",
    "with_usage",
]
