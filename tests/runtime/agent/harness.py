"""A host for agent-loop tests: a scripted model adapter (the production adapter protocol, answering from a list of
chunk streams), chunk builders, and a context with the store, prompt, transport, tools and agent plugins loaded."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio

from dsh.runtime import agent, llm, prompt, tools
from dsh.runtime.kernel import Context
from dsh.runtime.llm import (
    BlockEnd,
    BlockStart,
    CallId,
    Finish,
    FinishError,
    FinishMaxTokens,
    FinishStop,
    FinishToolCalls,
    LlmFailure,
    LlmRequest,
    ReasoningBlock,
    ReasoningDelta,
    StreamChunk,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    UsageChunk,
)
from dsh.runtime.session import STORE, CountingIds, FixedClock, SessionStore, SessionStoreProtocol
from dsh.runtime.tools import TOOLS, Tool, ToolContext

PROVIDER = "scripted"
MODEL = "scripted-model"

Step = Sequence[StreamChunk] | Callable[[LlmRequest], AsyncIterator[StreamChunk]]


class ScriptedAdapter:
    """Answers call N with `steps[N]`: a list of chunks, or an async generator function of the request (to stall,
    raise or inspect). Every request is kept in `requests`.

    Agents that run concurrently (subagents started by parallel tool calls) interleave their calls in no fixed
    order, so each can have a script of its own: a call whose `key(request)` names one of `scripts` is answered
    from that script, in order; every other call from `steps`. `key` defaults to the request's session id; a test
    may set it once the ids it needs exist (for example, to the tool call that spawned the session).

    `window`, when given, is the context window the adapter states for every model (None: it does not know),
    through the optional `context_window` method of the adapter protocol; `windows` states one per model."""

    def __init__(
        self,
        steps: Sequence[Step] = (),
        *,
        scripts: Mapping[str, Sequence[Step]] | None = None,
        key: Callable[[LlmRequest], str | None] | None = None,
        window: int | None = None,
        windows: Mapping[str, int] | None = None,
    ) -> None:
        self.window = window
        self.windows = dict(windows or {})
        self.steps = list(steps)
        self.scripts = {name: list(script) for name, script in (scripts or {}).items()}
        self.key: Callable[[LlmRequest], str | None] = key or (lambda request: request.session_id)
        self.requests: list[LlmRequest] = []

    def unserved(self) -> dict[str, int]:
        """How many scripted answers are left, by script (`""` for `steps`); all zero once a test consumed them."""
        left = {"": len(self.steps)} | {name: len(script) for name, script in self.scripts.items()}
        return {name: count for name, count in left.items() if count}

    def context_window(self, provider: str, model: str) -> int | None:
        return self.windows.get(model, self.window)

    async def stream(self, request: LlmRequest) -> AsyncIterator[StreamChunk]:
        self.requests.append(request)
        name = self.key(request)
        queue = self.scripts.get(name, self.steps) if name is not None else self.steps
        if not queue:
            raise AssertionError(
                f"unscripted model call {len(self.requests)}: session {request.session_id} (script "
                f"{name if name in self.scripts else 'steps'!r}), {request.call}"
            )
        step = queue.pop(0)
        if callable(step):
            async for chunk in step(request):
                yield chunk
            return
        for chunk in step:
            await anyio.lowlevel.checkpoint()
            yield chunk


def usage(inputs: int = 10, outputs: int = 5) -> UsageChunk:
    return UsageChunk(TokenUsage(input_tokens=inputs, output_tokens=outputs))


def text(answer: str, *, reasoning: str | None = None, finish: Finish | None = None) -> list[StreamChunk]:
    """A stream answering `answer` (after `reasoning`, when given), split in two deltas."""
    chunks: list[StreamChunk] = []
    index = 0
    if reasoning is not None:
        chunks += [
            BlockStart(index=0, block_type="reasoning"),
            ReasoningDelta(index=0, text=reasoning),
            BlockEnd(index=0, block=ReasoningBlock(reasoning)),
        ]
        index = 1
    half = len(answer) // 2
    chunks += [
        BlockStart(index=index, block_type="text"),
        TextDelta(index=index, text=answer[:half]),
        TextDelta(index=index, text=answer[half:]),
        BlockEnd(index=index, block=TextBlock(answer)),
        usage(),
        finish or Finish(reason=FinishStop()),
    ]
    return chunks


def calls(*items: tuple[str, str, str], max_tokens: bool = False) -> list[StreamChunk]:
    """A stream asking for tool calls `(call_id, name, arguments_json)`, arguments split in two fragments."""
    chunks: list[StreamChunk] = []
    for index, (call_id, name, arguments) in enumerate(items):
        half = len(arguments) // 2
        chunks += [
            BlockStart(index=index, block_type="tool-call"),
            ToolCallDelta(index=index, id=CallId(call_id), name=name, arguments_delta=arguments[:half]),
            ToolCallDelta(index=index, id=CallId(call_id), arguments_delta=arguments[half:]),
            BlockEnd(index=index, block=ToolCallBlock(CallId(call_id), name, arguments)),
        ]
    reason = FinishMaxTokens() if max_tokens else FinishToolCalls()
    return [*chunks, usage(), Finish(reason=reason)]


def failure(code: str, message: str = "the provider failed") -> list[StreamChunk]:
    return [Finish(reason=FinishError(LlmFailure(message=message, code=code)))]


def echo_tool(name: str = "echo") -> Tool:
    async def execute(arguments: dict[str, Any], context: ToolContext) -> str:
        return f"echo: {arguments['text']}"

    return Tool(
        name=name,
        description="Echo `text` back.",
        parameters={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        execute=execute,
    )


def slow_tool(started: anyio.Event, name: str = "wait") -> Tool:
    """A tool that signals `started` and then waits until cancelled."""

    async def execute(arguments: dict[str, Any], context: ToolContext) -> str:
        started.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    return Tool(name=name, description="Wait.", parameters={"type": "object"}, execute=execute)


@contextmanager
def host(
    tmp_path: Path,
    adapter: llm.LlmAdapter,
    *,
    persona: str = "",
    tool_list: Sequence[Tool] = (),
) -> Iterator[Context]:
    """A root context with a store in `tmp_path` (deterministic clock and ids) and every core plugin loaded."""
    ctx = Context()
    with SessionStore(tmp_path / "sessions.db", clock=FixedClock(1_000, 1), ids=CountingIds()) as store:
        ctx.provide(STORE, store)
        ctx.plugin(prompt.plugin, prompt.PromptConfig(persona=persona))
        ctx.plugin(llm.plugin)
        ctx.get(llm.LLM).register(PROVIDER, adapter)
        ctx.plugin(tools.plugin)
        for tool in tool_list:
            ctx.get(TOOLS).register(tool)
        ctx.plugin(agent.plugin)
        try:
            yield ctx
        finally:
            ctx.dispose()


OPTIONS = agent.AgentOptions(provider=PROVIDER, model=MODEL, cwd=Path("/work/project"))


def event_types(store: SessionStoreProtocol, session_id: str) -> list[str]:
    return [event.type for event in store.events(session_id)]


Hook = Callable[..., Awaitable[Any]]
