"""The original's recorded DeepSeek calls, fed back as DeepSeek SSE through the adapter, give the very chunks the
recordings hold and assemble to the recorded messages."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from dsh.runtime.llm import BlockAssembler, MessageId
from tests.runtime.llm.harness import ALL_CALLS, Call

from .helpers import call as wire_call
from .helpers import collect, hello, wire
from .loopback import DONE, Reply, data, loopback

pytestmark = pytest.mark.anyio

_WIRE_REASONS = {"stop": "stop", "tool-calls": "tool_calls", "max-tokens": "length"}


def replayable(call: Call) -> bool:
    """Whether DeepSeek SSE can give these chunks: a finished call whose every block streamed a delta and ended
    (the mapping opens a block on its first non-empty delta and ends every open block at `[DONE]`; an authored
    stream cut inside a block, or a block with no delta, is another adapter's)."""
    finish = call.finish
    if finish is None:
        return False
    started = {c["index"] for c in call.chunks if c["type"] == "block-start"}
    streamed = {c["index"] for c in call.chunks if c["type"].endswith("-delta")}
    ended = {c["index"] for c in call.chunks if c["type"] == "block-end"}
    if not started <= streamed & ended:
        return False
    reason = finish["reason"]
    return reason["kind"] in _WIRE_REASONS or reason["failure"]["code"] == "EMPTY_RESPONSE"


def to_sse(chunks: list[dict[str, Any]]) -> bytes:
    """DeepSeek SSE that the original's mapping would have turned into `chunks`."""
    out: list[bytes] = []
    wire_index: dict[int, int] = {}
    started: set[int] = set()
    usage: dict[str, Any] | None = None
    reason = "stop"
    for chunk in chunks:
        kind = chunk["type"]
        if kind == "block-start" and chunk["blockType"] == "tool-call":
            wire_index[chunk["index"]] = len(wire_index)
        elif kind == "text-delta":
            out.append(data(wire(content=chunk["text"])))
        elif kind == "reasoning-delta":
            out.append(data(wire(reasoning=chunk["text"])))
        elif kind == "tool-call-delta":
            k = wire_index[chunk["index"]]
            first = chunk["index"] not in started
            started.add(chunk["index"])
            delta = (
                wire_call(k, chunk["argumentsDelta"], id=chunk["id"], name=chunk["name"])
                if first
                else wire_call(k, chunk["argumentsDelta"])
            )
            out.append(data(wire(tool_calls=[delta])))
        elif kind == "usage":
            recorded = chunk["usage"]
            cached = recorded.get("cacheReadTokens")
            usage = {
                "prompt_tokens": recorded["inputTokens"] + (cached or 0),
                "completion_tokens": recorded["outputTokens"],
            }
            if cached is not None:
                usage["prompt_cache_hit_tokens"] = cached
            if "reasoningTokens" in recorded:
                usage["completion_tokens_details"] = {"reasoning_tokens": recorded["reasoningTokens"]}
        elif kind == "finish":
            reason = _WIRE_REASONS.get(chunk["reason"]["kind"], "stop")
    out.append(data(wire(finish=reason)))
    if usage is not None:
        out.append(data(wire(no_choices=True, usage=usage)))
    return b"".join(out) + DONE


def deferred(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`chunks` with every block-end moved to the end of the blocks, in opening order, as the DeepSeek mapping
    emits them (authored fixtures end each block at once; live recordings are unchanged by this)."""
    order = [c["index"] for c in chunks if c["type"] == "block-start"]
    ends = {c["index"]: c for c in chunks if c["type"] == "block-end"}
    body = [c for c in chunks if c["type"] not in ("block-end", "usage", "finish")]
    tail = [c for c in chunks if c["type"] in ("usage", "finish")]
    return body + [ends[i] for i in order] + tail


CALLS = [c for c in ALL_CALLS if replayable(c)]


def test_most_recorded_calls_are_replayable_and_most_need_no_reordering() -> None:
    assert len(CALLS) >= 20
    assert sum(deferred(c.chunks) == c.chunks for c in CALLS) >= 20


@pytest.mark.parametrize("call", CALLS, ids=lambda c: f"{c.log}@{c.key}")
async def test_a_recorded_stream_fed_back_as_sse_gives_the_recorded_chunks(call: Call) -> None:
    body = to_sse(call.chunks)
    async with loopback(Reply(parts=[body[i : i + 1500] for i in range(0, len(body), 1500)])) as server:
        chunks = await collect(server.base_url, hello())
    assert [json.loads(msgspec.json.encode(c)) for c in chunks] == deferred(call.chunks)
    if call.message is not None:
        assembler = BlockAssembler()
        for chunk in chunks:
            assembler.feed(chunk)
        message = assembler.message(id=MessageId("m"), provider="p", model="m")
        assert json.loads(msgspec.json.encode(message.content)) == call.message["content"]
