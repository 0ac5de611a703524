"""`LlmRuntime`, the normalisation boundary of the model transport, and the `llm` plugin that provides it.

Adapters register by provider id. `stream(request)` routes to one and guarantees the stream protocol to its caller:
every failure (unknown provider, an adapter raising at creation or mid-stream, a protocol violation, a stream that
ends without `finish`) becomes one terminal `finish{error}` chunk with a stable code, after `block-end`s for the
blocks still open; exactly one `finish` per call, and nothing after it.

Cancellation is not a failure: an anyio cancellation (or `aclose()` by the caller) propagates through unchanged and
yields no chunk, because a cancelled task cannot deliver one and swallowing it would break the caller's cancel
scope. The recorded logs agree: a cancelled call has no `finish` (the loop logs the interruption itself). The
`ABORTED` code and `finish{aborted}` exist for recorded logs and replay overrides; no live path produces them.

The stream is assembled here, once: `CallStream.assembled` holds exactly the chunks its consumer has received
(each is fed before it is handed over), so a caller reads the call's blocks, usage and finish from it, and a
caller cancelled mid-stream reads what it received so far.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from dsh.runtime.kernel import Context, Disposer, NoConfig, Plugin, ServiceKey

from ._assembler import BlockAssembler
from ._chunks import (
    BlockEnd,
    BlockStart,
    FailureCode,
    Finish,
    FinishError,
    LlmFailure,
    ReasoningDelta,
    StreamChunk,
    TextDelta,
    ToolCallDelta,
    UsageChunk,
)
from ._errors import ChunkProtocolError, ContextWindowError, LlmCallError, ProviderConflictError, error_chain
from ._request import LlmAdapter, LlmRequest

__all__ = ["LLM", "CallStream", "LlmRuntime", "plugin"]

log = logging.getLogger("dsh.llm")

_CHUNK_TYPES = (BlockStart, TextDelta, ReasoningDelta, ToolCallDelta, BlockEnd, UsageChunk, Finish)


class CallStream:
    """The chunks of one call (an async iterator; close it with `contextlib.aclosing`) and `assembled`, their
    assembly: every chunk the consumer has received, and no other."""

    __slots__ = ("_chunks", "assembled")

    def __init__(self, chunks: AsyncGenerator[StreamChunk, None], assembled: BlockAssembler) -> None:
        self._chunks = chunks
        self.assembled = assembled

    def __aiter__(self) -> CallStream:
        return self

    async def __anext__(self) -> StreamChunk:
        return await self._chunks.__anext__()

    async def aclose(self) -> None:
        await self._chunks.aclose()

    async def drain(self) -> BlockAssembler:
        """Consume the rest of the stream (closing it) and return the whole call's assembly."""
        try:
            async for _ in self._chunks:
                pass
        finally:
            await self._chunks.aclose()
        return self.assembled


class LlmRuntime:
    """Routes model calls to adapters by provider id and normalises every outcome to the chunk protocol.

    `ctx.get(LLM)` returns a view bound to the caller's context: an adapter it registers is disposed when that
    plugin unloads.
    """

    __slots__ = ("_adapters", "_ctx")

    def __init__(self) -> None:
        self._adapters: dict[str, LlmAdapter] = {}
        self._ctx: Context | None = None

    def bind_context(self, ctx: Context) -> LlmRuntime:
        view = object.__new__(LlmRuntime)
        view._adapters = self._adapters
        view._ctx = ctx
        return view

    def register(self, provider: str, adapter: LlmAdapter) -> Disposer:
        """Serve calls for `provider` with `adapter`; the disposer unregisters it."""
        if not provider:
            raise ValueError("a provider id must be non-empty")
        if provider in self._adapters:
            raise ProviderConflictError(provider)
        self._adapters[provider] = adapter

        def undo() -> None:
            if self._adapters.get(provider) is adapter:
                del self._adapters[provider]

        return self._ctx.effect(undo) if self._ctx is not None else Disposer(undo)

    def providers(self) -> tuple[str, ...]:
        """The registered provider ids, sorted."""
        return tuple(sorted(self._adapters))

    def adapter(self, provider: str) -> LlmAdapter | None:
        return self._adapters.get(provider)

    def context_window(self, provider: str, model: str) -> int | None:
        """The context window, in tokens, of `model` served under `provider`, as its adapter states it; None when
        no adapter is registered for `provider`, the adapter has no `context_window` method, or it does not know.
        An answer that is not a positive int or None raises `ContextWindowError`."""
        adapter = self._adapters.get(provider)
        answer = getattr(adapter, "context_window", None)
        if answer is None:
            return None
        window = answer(provider, model)
        if window is None:
            return None
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise ContextWindowError(provider, model, window)
        return window

    def stream(self, request: LlmRequest) -> CallStream:
        """The chunks of one call, ending with exactly one `finish`, and their assembly. Close it
        (`contextlib.aclosing`) when you stop early; cancellation propagates and yields nothing."""
        assembler = BlockAssembler()
        return CallStream(self._chunks(request, assembler), assembler)

    async def _chunks(
        self, request: LlmRequest, assembler: BlockAssembler
    ) -> AsyncGenerator[StreamChunk, None]:
        adapter = self._adapters.get(request.provider)
        if adapter is None:
            known = ", ".join(self.providers()) or "none"
            unknown = Finish(
                reason=FinishError(
                    LlmFailure(
                        message=f'no adapter is registered for provider "{request.provider}"; '
                        f"registered providers: {known}",
                        code=FailureCode.UNKNOWN_PROVIDER,
                    )
                )
            )
            assembler.feed(unknown)
            yield unknown
            return
        failure: LlmFailure
        try:
            iterator = aiter(adapter.stream(request))
        except Exception as error:
            failure = _failure_of(error, request.provider)
        else:
            try:
                while True:
                    try:
                        chunk = await anext(iterator)
                    except StopAsyncIteration:
                        failure = LlmFailure(
                            message=f'the adapter for provider "{request.provider}" ended its stream '
                            "without a finish chunk",
                            code=FailureCode.STREAM_CLOSED,
                        )
                        break
                    except Exception as error:
                        failure = _failure_of(error, request.provider)
                        break
                    if not isinstance(chunk, _CHUNK_TYPES):
                        failure = _protocol(f"the adapter yielded {type(chunk).__name__}, not a StreamChunk")
                        break
                    try:
                        assembler.feed(chunk)
                    except ChunkProtocolError as error:
                        failure = _protocol(
                            f'the adapter for provider "{request.provider}" broke the stream '
                            f"protocol: {error}"
                        )
                        break
                    yield chunk
                    if assembler.done:
                        return
            finally:
                await _close(iterator, request.provider)
        for index, block in assembler.open_blocks():
            closing = BlockEnd(index=index, block=block)
            assembler.feed(closing)
            yield closing
        finish = Finish(reason=FinishError(failure))
        assembler.feed(finish)
        yield finish


LLM = ServiceKey[LlmRuntime]("llm")


def _protocol(message: str) -> LlmFailure:
    return LlmFailure(message=message, code=FailureCode.PROTOCOL)


def _failure_of(error: Exception, provider: str) -> LlmFailure:
    if isinstance(error, LlmCallError):
        return error.failure
    return LlmFailure(
        message=f'the adapter for provider "{provider}" raised {error_chain(error)}',
        code=FailureCode.UNKNOWN,
    )


async def _close(iterator: AsyncIterator[Any], provider: str) -> None:
    aclose = getattr(iterator, "aclose", None)
    if aclose is None:
        return
    try:
        await aclose()
    except Exception:
        # The call's outcome is already decided (and possibly delivered); a failing cleanup cannot change it, so it
        # is reported here instead of surfacing after the terminal chunk.
        log.exception('closing the stream of provider "%s" failed', provider)


def _apply(ctx: Context, config: NoConfig) -> None:
    ctx.provide(LLM, LlmRuntime())


plugin = Plugin(
    name="llm",
    apply=_apply,
    provides=(LLM,),
    description="the model transport: routes calls to adapters by provider and normalises failures to chunks",
)
