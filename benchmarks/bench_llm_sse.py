"""The OpenAI-compatible adapter's SSE parsing and chunk mapping throughput, against the bare cost of the same bytes.

A local server streams one DeepSeek-shaped response (reasoning, text, a tool call split into many fragments, usage)
over 127.0.0.1. Measured, best of several runs each (the three interleaved, round by round):
  * socket: httpx reading the same bytes from the same server and discarding them (the transport floor);
  * socket + json: the same read, splitting data lines and `msgspec.json.decode`-ing each one generically;
  * adapter: `LlmRuntime.stream` through `OpenAICompatibleAdapter`, every chunk consumed.
Figures are ratios: adapter / socket, adapter / (socket + json).
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from contextlib import aclosing

import anyio
import httpx
import msgspec
from anyio.abc import SocketAttribute, SocketStream

from dsh.plugins.llm_openai import OpenAICompatibleAdapter, ProviderConfig
from dsh.runtime.llm import LlmRequest, LlmRuntime, MessageId, TextBlock, UserMessage

EVENTS = 30_000
WRITE_SIZE = 4096
RUNS = 7


def _event(
    delta: dict[str, object], finish: str | None = None, usage: dict[str, object] | None = None
) -> bytes:
    chunk: dict[str, object] = {
        "id": "0b9f1c6e-3e1e-4b51-9a5a-7c1c2d3e4f50",
        "object": "chat.completion.chunk",
        "created": 1783352051,
        "model": "deepseek-v4-flash",
        "system_fingerprint": "fp_benchmark",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }
    if usage is not None:
        chunk["usage"] = usage
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


def build_body(events: int = EVENTS) -> bytes:
    """One response of `events` deltas: a quarter reasoning, half text, a quarter tool-call argument fragments."""
    parts = [_event({"role": "assistant", "content": None, "reasoning_content": ""})]
    quarter = events // 4
    parts += [_event({"reasoning_content": f" thought{i}"}) for i in range(quarter)]
    parts += [_event({"content": f" word{i}"}) for i in range(2 * quarter)]
    first = {
        "index": 0,
        "id": "call_00_bench",
        "type": "function",
        "function": {"name": "bash", "arguments": ""},
    }
    parts.append(_event({"tool_calls": [first]}))
    parts += [
        _event({"tool_calls": [{"index": 0, "function": {"arguments": f"a{i}"}}]}) for i in range(quarter)
    ]
    usage = {
        "prompt_tokens": 3000,
        "completion_tokens": events,
        "prompt_cache_hit_tokens": 2816,
        "completion_tokens_details": {"reasoning_tokens": quarter},
    }
    parts.append(_event({}, finish="tool_calls", usage=usage))
    parts.append(b"data: [DONE]\n\n")
    return b"".join(parts)


async def _serve(stream: SocketStream, body: bytes) -> None:
    async with stream:
        request = b""
        while b"\r\n\r\n" not in request:
            request += await stream.receive()
        head, _, rest = request.partition(b"\r\n\r\n")
        length = next(
            (
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length")
            ),
            0,
        )
        while len(rest) < length:
            rest += await stream.receive()
        await stream.send(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n"
            + f"content-length: {len(body)}\r\n\r\n".encode()
        )
        for start in range(0, len(body), WRITE_SIZE):
            await stream.send(body[start : start + WRITE_SIZE])


async def _best(runs: dict[str, Callable[[], Awaitable[int]]]) -> dict[str, tuple[float, int]]:
    """The best time of each run, the runs interleaved round by round: on a shared machine a burst of load then
    slows one round of every run, not every attempt of one of them."""
    best = {name: (float("inf"), 0) for name in runs}
    for _ in range(RUNS):
        for name, run in runs.items():
            started = time.perf_counter()
            count = await run()
            elapsed = time.perf_counter() - started
            best[name] = (min(best[name][0], elapsed), count)
    return best


async def measure(events: int = EVENTS) -> dict[str, float]:
    body = build_body(events)
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(SocketAttribute.local_port)
    base_url = f"http://127.0.0.1:{port}/v1"
    request = LlmRequest(
        provider="bench", model="m", messages=(UserMessage(id=MessageId("u"), content=(TextBlock("go"),)),)
    )
    results: dict[str, float] = {}
    async with listener, anyio.create_task_group() as group:

        async def handle(stream: SocketStream) -> None:
            await _serve(stream, body)

        group.start_soon(listener.serve, handle)
        async with httpx.AsyncClient() as client:

            async def socket_only() -> int:
                total = 0
                async with client.stream("POST", f"{base_url}/chat/completions", content=b"{}") as response:
                    async for part in response.aiter_bytes():
                        total += len(part)
                return total

            async def socket_and_json() -> int:
                decoded = 0
                async with client.stream("POST", f"{base_url}/chat/completions", content=b"{}") as response:
                    buffer = b""
                    async for part in response.aiter_bytes():
                        buffer += part
                        lines = buffer.split(b"\n")
                        buffer = lines.pop()
                        for line in lines:
                            if line.startswith(b"data: {"):
                                msgspec.json.decode(line[6:])
                                decoded += 1
                return decoded

            llm = LlmRuntime()
            route = ProviderConfig(id="bench", base_url=base_url)
            llm.register("bench", OpenAICompatibleAdapter(route, client=client))

            async def adapter() -> int:
                chunks = 0
                async with aclosing(llm.stream(request)) as stream:
                    async for _ in stream:
                        chunks += 1
                return chunks

            best = await _best({"socket": socket_only, "socket+json": socket_and_json, "adapter": adapter})
            results["socket"], results["bytes"] = best["socket"]
            results["socket+json"], results["lines"] = best["socket+json"]
            results["adapter"], results["chunks"] = best["adapter"]
        group.cancel_scope.cancel()
    return results


def main() -> int:
    """Print the ratios; 0 always (this benchmark has no target to miss)."""
    r = anyio.run(measure)
    print(
        f"one response: {int(r['lines'])} SSE events, {r['bytes'] / 1e6:.1f} MB, {int(r['chunks'])} chunks out "
        f"(best of {RUNS})"
    )
    print(f"adapter / socket read            = {r['adapter'] / r['socket']:.2f}x")
    print(f"adapter / socket read + json     = {r['adapter'] / r['socket+json']:.2f}x")
    print(f"socket read + json / socket read = {r['socket+json'] / r['socket']:.2f}x")
    return 0


if __name__ == "__main__":
    main()
