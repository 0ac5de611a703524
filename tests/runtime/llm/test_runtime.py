"""LlmRuntime: routing by provider, registration as an effect, and the guarantee that every call ends with exactly
one `finish` (a Hypothesis property over scripted adapter failures), while cancellation propagates."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh.runtime.kernel import Context, Plugin
from dsh.runtime.llm import (
    LLM,
    BlockAssembler,
    BlockEnd,
    BlockStart,
    CallId,
    ChunkProtocolError,
    ContextWindowError,
    Finish,
    FinishError,
    FinishStop,
    LlmCallError,
    LlmFailure,
    LlmRequest,
    LlmRuntime,
    MessageId,
    ProviderConflictError,
    StreamChunk,
    TextBlock,
    TextDelta,
    ToolCallBlock,
    ToolCallDelta,
    UserMessage,
)
from dsh.runtime.llm import plugin as llm_plugin
from tests.strategies import stream_chunks, valid_calls

REQUEST = LlmRequest(
    provider="fake", model="m", messages=(UserMessage(id=MessageId("u"), content=(TextBlock("hi"),)),)
)


class Scripted:
    """An adapter that plays `steps` (chunks, or exceptions to raise at that point); `on_create` raises from
    `stream()` itself; `closed` tells whether its iterator was closed."""

    def __init__(
        self, steps: Sequence[StreamChunk | BaseException | Any], *, on_create: Exception | None = None
    ) -> None:
        self.steps = list(steps)
        self.on_create = on_create
        self.closed = False
        self.started = False

    def stream(self, request: LlmRequest) -> AsyncIterator[StreamChunk]:
        if self.on_create is not None:
            raise self.on_create
        return self._play()

    async def _play(self) -> AsyncIterator[StreamChunk]:
        self.started = True
        try:
            for step in self.steps:
                await anyio.lowlevel.checkpoint()
                if isinstance(step, BaseException):
                    raise step
                yield step
        finally:
            self.closed = True


async def run(adapter: Scripted | None, request: LlmRequest = REQUEST) -> list[StreamChunk]:
    llm = LlmRuntime()
    if adapter is not None:
        llm.register("fake", adapter)
    async with aclosing(llm.stream(request)) as stream:
        return [chunk async for chunk in stream]


def failure(chunks: list[StreamChunk]) -> LlmFailure:
    last = chunks[-1]
    assert isinstance(last, Finish)
    assert isinstance(last.reason, FinishError)
    return last.reason.failure


# -- the property ----------------------------------------------------------------------------------------------

endings = st.one_of(
    st.just("complete"),
    st.just("end"),
    st.builds(
        lambda f: LlmCallError(f), st.builds(LlmFailure, message=st.text(max_size=5), code=st.just("SERVER"))
    ),
    st.builds(RuntimeError, st.text(max_size=5)),
    stream_chunks,
    st.lists(stream_chunks, min_size=1, max_size=3).map(lambda extra: ("after-finish", extra)),
)


@given(call=valid_calls(), cut=st.floats(0, 1), ending=endings, on_create=st.booleans())
def test_every_call_ends_with_exactly_one_finish_and_nothing_after_it(
    call: tuple[tuple[Any, ...], list[StreamChunk]], cut: float, ending: Any, on_create: bool
) -> None:
    _, chunks = call
    if ending == "complete":
        steps: list[Any] = chunks
    elif isinstance(ending, tuple):
        steps = [*chunks, *ending[1]]
    else:
        prefix = chunks[: int(cut * (len(chunks) - 1))]  # never the finish
        steps = prefix if ending == "end" else [*prefix, ending]
    adapter = Scripted(steps, on_create=RuntimeError("cannot start") if on_create else None)
    out = anyio.run(run, adapter)

    assert sum(isinstance(c, Finish) for c in out) == 1
    assert isinstance(out[-1], Finish)
    checked = BlockAssembler()
    for chunk in out:
        checked.feed(chunk)  # the output is always a well-formed stream: every block-start has its block-end
    assert checked.done
    assert checked.open_blocks() == ()
    if on_create:
        assert out == [out[-1]]
        return
    assert adapter.closed
    if ending == "complete" or isinstance(ending, tuple):
        assert out == chunks
    else:
        # Valid chunks pass through unchanged up to the failure; then the open blocks end; then the error finish.
        valid = 0
        probe = BlockAssembler()
        for step in steps:
            if isinstance(step, BaseException):
                break
            try:
                probe.feed(step)
            except ChunkProtocolError:
                break
            valid += 1
            if probe.done:
                break
        assert out[:valid] == steps[:valid]
        if probe.done:
            assert out == steps[:valid]
        else:
            assert all(isinstance(c, BlockEnd) for c in out[valid:-1])
            assert isinstance(out[-1], Finish)
            assert isinstance(out[-1].reason, FinishError)


# -- routing and registration ----------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_an_unknown_provider_is_one_error_finish_naming_the_registered_ones() -> None:
    llm = LlmRuntime()
    llm.register("b", Scripted([]))
    llm.register("a", Scripted([]))
    async with aclosing(llm.stream(REQUEST)) as stream:
        chunks = [c async for c in stream]
    assert failure(chunks) == LlmFailure(
        message='no adapter is registered for provider "fake"; registered providers: a, b',
        code="UNKNOWN_PROVIDER",
    )
    assert len(chunks) == 1


def test_registration_returns_its_disposer_and_refuses_a_second_adapter() -> None:
    llm = LlmRuntime()
    dispose = llm.register("fake", Scripted([]))
    with pytest.raises(ProviderConflictError, match='already registered for provider "fake"'):
        llm.register("fake", Scripted([]))
    dispose()
    assert llm.providers() == ()
    llm.register("fake", Scripted([]))
    assert llm.providers() == ("fake",)
    with pytest.raises(ValueError, match="non-empty"):
        llm.register("", Scripted([]))


class Windowed(Scripted):
    """A `Scripted` adapter that states context windows through the optional `context_window` method."""

    def __init__(self, windows: dict[str, Any]) -> None:
        super().__init__([])
        self.windows = windows
        self.asked: list[tuple[str, str]] = []

    def context_window(self, provider: str, model: str) -> Any:
        self.asked.append((provider, model))
        return self.windows.get(model)


def test_the_context_window_is_the_adapters_answer_or_none() -> None:
    llm = LlmRuntime()
    windowed = Windowed({"m": 64_000})
    llm.register("windowed", windowed)
    llm.register("plain", Scripted([]))  # no context_window method: an adapter written before it existed
    assert llm.context_window("windowed", "m") == 64_000
    assert windowed.asked == [("windowed", "m")]
    assert llm.context_window("windowed", "other") is None
    assert llm.context_window("plain", "m") is None
    assert llm.context_window("nobody", "m") is None


@pytest.mark.parametrize("answer", [0, -5, 1.5, "128000", True])
def test_a_context_window_that_is_not_a_positive_int_is_refused_naming_the_adapter(answer: Any) -> None:
    llm = LlmRuntime()
    llm.register("windowed", Windowed({"m": answer}))
    with pytest.raises(
        ContextWindowError, match=r'provider "windowed" answered context_window=.* for model "m"'
    ) as e:
        llm.context_window("windowed", "m")
    assert (e.value.provider, e.value.model, e.value.value) == ("windowed", "m", answer)


def test_unloading_the_plugin_that_registered_an_adapter_unregisters_it() -> None:
    ctx = Context()
    ctx.plugin(llm_plugin)
    adapter = Scripted([])

    def apply(plugin_ctx: Context, config: object) -> None:
        plugin_ctx.get(LLM).register("fake", adapter)

    before = ctx.get(LLM).providers()
    loaded = ctx.plugin(Plugin(name="fake-llm", apply=apply, needs=(LLM,)))
    assert ctx.get(LLM).adapter("fake") is adapter
    loaded.unload()
    assert ctx.get(LLM).providers() == before == ()


# -- failures, one at a time ---------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_an_adapter_failure_keeps_its_failure_and_ends_open_blocks() -> None:
    boom = LlmFailure(message="down", code="SERVER", status=503, provider_retry_after_ms=2000, request_id="r")
    chunks = await run(
        Scripted(
            [
                BlockStart(index=0, block_type="text"),
                TextDelta(index=0, text="par"),
                BlockStart(index=1, block_type="tool-call"),
                ToolCallDelta(index=1, id=CallId("c"), name="bash", arguments_delta="{"),
                LlmCallError(boom),
            ]
        )
    )
    assert chunks[4:] == [
        BlockEnd(index=0, block=TextBlock("par")),
        BlockEnd(index=1, block=ToolCallBlock(CallId("c"), "bash", "{")),
        Finish(reason=FinishError(boom)),
    ]


@pytest.mark.anyio
async def test_any_other_exception_is_unknown_with_its_chain() -> None:
    try:
        raise KeyError("inner")
    except KeyError as inner:
        error = RuntimeError("outer")
        error.__cause__ = inner
    assert failure(await run(Scripted([error]))) == LlmFailure(
        message="the adapter for provider \"fake\" raised RuntimeError: outer <- KeyError: 'inner'",
        code="UNKNOWN",
    )
    assert failure(await run(Scripted([], on_create=ValueError("bad")))).code == "UNKNOWN"


@pytest.mark.anyio
async def test_a_stream_without_finish_and_a_non_chunk_are_failures() -> None:
    assert failure(await run(Scripted([]))).code == "STREAM_CLOSED"
    bad = failure(await run(Scripted([{"type": "finish"}])))
    assert bad == LlmFailure(message="the adapter yielded dict, not a StreamChunk", code="PROTOCOL")


@pytest.mark.anyio
async def test_a_protocol_violation_is_a_failure_naming_it() -> None:
    chunks = await run(Scripted([TextDelta(index=3, text="x"), Finish(reason=FinishStop())]))
    assert chunks == [chunks[-1]]
    assert failure(chunks).message == (
        'the adapter for provider "fake" broke the stream protocol: '
        "chunk 0: text-delta for block 3, which is never started"
    )


@pytest.mark.anyio
async def test_cancellation_propagates_yields_nothing_and_closes_the_adapter() -> None:
    adapter = Scripted([BlockStart(index=0, block_type="text"), TextDelta(index=0, text="x")])

    async def forever() -> AsyncIterator[StreamChunk]:
        adapter.started = True
        try:
            yield BlockStart(index=0, block_type="text")
            await anyio.sleep_forever()
            yield TextDelta(index=0, text="never")  # pragma: no cover
        finally:
            adapter.closed = True

    adapter._play = forever  # type: ignore[method-assign]  # swap in a stream that hangs
    llm = LlmRuntime()
    llm.register("fake", adapter)
    seen: list[StreamChunk] = []
    with anyio.move_on_after(0.05) as scope:
        async with aclosing(llm.stream(REQUEST)) as stream:
            async for chunk in stream:
                seen.append(chunk)
    assert scope.cancelled_caught
    assert seen == [BlockStart(index=0, block_type="text")]
    assert adapter.closed


@pytest.mark.anyio
async def test_stopping_early_closes_the_adapter() -> None:
    adapter = Scripted([BlockStart(index=0, block_type="text"), TextDelta(index=0, text="x")])
    llm = LlmRuntime()
    llm.register("fake", adapter)
    async with aclosing(llm.stream(REQUEST)) as stream:
        async for _ in stream:
            break
    assert adapter.closed


@pytest.mark.anyio
async def test_a_failing_cleanup_is_logged_after_the_finish_not_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class BadClose:
        def __init__(self) -> None:
            self.sent = False

        def __aiter__(self) -> BadClose:
            return self

        async def __anext__(self) -> StreamChunk:
            if self.sent:
                raise StopAsyncIteration
            self.sent = True
            return Finish(reason=FinishStop())

        async def aclose(self) -> None:
            raise OSError("socket already gone")

    class Adapter:
        def stream(self, request: LlmRequest) -> AsyncIterator[StreamChunk]:
            return BadClose()

    llm = LlmRuntime()
    llm.register("fake", Adapter())
    with caplog.at_level(logging.ERROR, logger="dsh.llm"):
        async with aclosing(llm.stream(REQUEST)) as stream:
            chunks = [c async for c in stream]
    assert chunks == [Finish(reason=FinishStop())]
    assert 'closing the stream of provider "fake" failed' in caplog.text
