"""Property: whatever the server sends (any mix of deltas, tool calls, usage, garbage, an error object, an early end
or a broken connection), the adapter through LlmRuntime gives a well-formed stream: every block-start has its
block-end, and exactly one finish comes last. Served by httpx's MockTransport (the production client interface)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

import anyio
import httpx
from hypothesis import given
from hypothesis import strategies as st

from dsh.plugins.llm_openai import OpenAICompatibleAdapter
from dsh.runtime.llm import BlockAssembler, BlockEnd, BlockStart, Finish, LlmRuntime, StreamChunk

from .helpers import ENV, call, hello, route, usage, wire

_text = st.text(max_size=6)
wire_events = st.one_of(
    st.builds(lambda t: wire(content=t), _text),
    st.builds(lambda t: wire(reasoning=t), _text),
    st.builds(
        lambda k, args, named: wire(
            tool_calls=[call(k, args, id=f"c{k}", name="f") if named else call(k, args)]
        ),
        st.integers(0, 2),
        _text,
        st.booleans(),
    ),
    st.builds(lambda r: wire(finish=r), st.sampled_from(["stop", "tool_calls", "length", "content_filter"])),
    st.builds(
        lambda p, c: wire(no_choices=True, usage=usage(p + c, c, hit=p)),
        st.integers(0, 99),
        st.integers(0, 99),
    ),
    st.just("garbage"),
    st.just({"error": {"message": "overloaded", "code": 503}}),
)
endings = st.sampled_from(["done", "eof", "broken", "status"])


def body_parts(events: list[Any], ending: str) -> list[bytes]:
    parts = [
        b"data: {oops\n\n" if e == "garbage" else b"data: " + json.dumps(e).encode() + b"\n\n" for e in events
    ]
    if ending == "done":
        parts.append(b"data: [DONE]\n\n")
    return parts


async def run(events: list[Any], ending: str) -> list[StreamChunk]:
    async def content() -> AsyncIterator[bytes]:
        for part in body_parts(events, ending):
            yield part
        if ending == "broken":
            raise httpx.ReadError("connection reset by peer")

    def handler(request: httpx.Request) -> httpx.Response:
        if ending == "status":
            return httpx.Response(503, json={"error": {"message": "busy"}})
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=content())

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        llm = LlmRuntime()
        llm.register("test", OpenAICompatibleAdapter(route("http://mock/v1"), client=client, env=ENV))
        async with aclosing(llm.stream(hello())) as stream:
            return [chunk async for chunk in stream]


@given(st.lists(wire_events, max_size=12), endings)
def test_any_server_stream_gives_one_finish_last_and_ends_every_block(events: list[Any], ending: str) -> None:
    chunks = anyio.run(run, events, ending)
    assert sum(isinstance(c, Finish) for c in chunks) == 1
    assert isinstance(chunks[-1], Finish)
    assembler = BlockAssembler()
    for chunk in chunks:
        assembler.feed(chunk)
    assert assembler.open_blocks() == ()
    starts = [c.index for c in chunks if isinstance(c, BlockStart)]
    ends = [c.index for c in chunks if isinstance(c, BlockEnd)]
    assert sorted(starts) == sorted(ends) == list(range(len(starts)))
