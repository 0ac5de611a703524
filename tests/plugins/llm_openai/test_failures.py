"""The adapter's failures, each a terminal `finish{error}` with its code: HTTP statuses, transport, truncation,
garbage, idle timeout, credentials; and cancellation, which propagates and closes the connection."""

from __future__ import annotations

import json
from contextlib import aclosing
from datetime import UTC, datetime
from email.utils import format_datetime

import anyio
import httpx
import pytest

from dsh.plugins.llm_openai import OpenAICompatibleAdapter
from dsh.plugins.llm_openai._sse import MAX_EVENT_BYTES
from dsh.runtime.llm import (
    BlockEnd,
    Finish,
    FinishError,
    FinishStop,
    LlmFailure,
    LlmRuntime,
    StreamChunk,
    TextBlock,
    TextDelta,
)

from .helpers import ENV, KEY, collect, hello, route, wire
from .loopback import Reply, data, loopback, refused_url, sse

pytestmark = pytest.mark.anyio


def failure_of(chunks: list[StreamChunk]) -> LlmFailure:
    assert sum(isinstance(c, Finish) for c in chunks) == 1
    last = chunks[-1]
    assert isinstance(last, Finish)
    assert isinstance(last.reason, FinishError)
    return last.reason.failure


def error_reply(status: int, message: str, headers: dict[str, str] | None = None) -> Reply:
    body = json.dumps({"error": {"message": message, "type": "x", "code": None}}).encode()
    return Reply(
        status=status,
        headers={"content-type": "application/json", **(headers or {})},
        parts=[body],
    )


@pytest.mark.parametrize(
    ("status", "message", "code"),
    [
        (401, "Authentication Fails, Your api key is invalid", "AUTH"),
        (403, "forbidden", "AUTH"),
        (413, "payload too large", "INVALID_REQUEST"),
        (402, "Insufficient Balance", "QUOTA"),
        (429, "You exceeded your current quota, please check your plan and billing", "QUOTA"),
        (429, "Rate limit reached", "RATE_LIMIT"),
        (
            400,
            "This model's maximum context length is 131072 tokens. However, you requested 140000 tokens",
            "CONTEXT_WINDOW_EXCEEDED",
        ),
        (400, "Invalid value for temperature", "INVALID_REQUEST"),
        (500, "internal error", "SERVER"),
        (503, "Server overloaded", "SERVER"),
        (404, "no such route", "HTTP_404"),
        (418, "teapot", "HTTP_418"),
    ],
)
async def test_http_errors_map_to_codes(status: int, message: str, code: str) -> None:
    async with loopback(error_reply(status, message, {"x-request-id": "req-9"})) as server:
        chunks = await collect(server.base_url)
    assert chunks == [
        Finish(
            reason=FinishError(
                LlmFailure(
                    message=f'provider "test" answered HTTP {status}: {message}',
                    code=code,
                    status=status,
                    request_id="req-9",
                )
            )
        )
    ]


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "7"}, 7000),
        ({"retry-after": "0.25"}, 250),
        ({"retry-after": format_datetime(datetime.fromtimestamp(1_000_030, UTC), usegmt=True)}, 30_000),
        ({"retry-after-ms": "1500"}, 1500),
        ({"retry-after": "0"}, None),
        ({"retry-after": format_datetime(datetime.fromtimestamp(999_000, UTC), usegmt=True)}, None),
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
async def test_retry_after_as_seconds_or_a_date(headers: dict[str, str], expected: int | None) -> None:
    async with loopback(
        error_reply(429, "slow down", {"x-deepseek-request-id": "ds-1", **headers})
    ) as server:
        chunks = await collect(server.base_url, now=1_000_000.0)
    failure = failure_of(chunks)
    assert (failure.code, failure.provider_retry_after_ms, failure.request_id) == (
        "RATE_LIMIT",
        expected,
        "ds-1",
    )


async def test_a_non_json_error_body_is_quoted() -> None:
    async with loopback(
        Reply(status=502, headers={"content-type": "text/html"}, parts=[b"<h1>Bad gateway</h1>"])
    ) as server:
        failure = failure_of(await collect(server.base_url))
    assert (failure.code, failure.status) == ("SERVER", 502)
    assert failure.message == 'provider "test" answered HTTP 502: <h1>Bad gateway</h1>'


async def test_connection_refused_is_transport_naming_the_endpoint() -> None:
    url = refused_url()
    failure = failure_of(await collect(url))
    assert failure.code == "TRANSPORT"
    assert failure.message.startswith(f"cannot reach {url}/chat/completions: ConnectError")


async def test_eof_before_done_is_stream_closed_and_open_blocks_are_ended() -> None:
    body = data(wire(content="part")) + data(wire(content="ial"))
    for chunked in (True, False):
        async with loopback(Reply(parts=[body], chunked=chunked)) as server:
            chunks = await collect(server.base_url)
        assert chunks[-2] == BlockEnd(index=0, block=TextBlock("partial"))
        assert failure_of(chunks) == LlmFailure(
            message='provider "test" closed the stream before [DONE]', code="STREAM_CLOSED"
        )


async def test_an_event_past_the_bound_is_malformed_and_the_stream_is_dropped() -> None:
    # 17 MiB of one data line with no end, in 1 MiB parts: the decoder refuses it at its 16 MiB bound instead of
    # holding the stream's bytes until the connection ends.
    head = data(wire(content="ok"))
    parts = [head, b"data: ", *(b"z" * (1 << 20) for _ in range(17))]
    async with loopback(Reply(parts=parts, end="hang")) as server:
        chunks = await collect(server.base_url)
    assert failure_of(chunks) == LlmFailure(
        message=f'provider "test" sent a stream event that passed {MAX_EVENT_BYTES} bytes before it ended',
        code="MALFORMED_RESPONSE",
    )


async def test_a_connection_cut_mid_body_is_transport() -> None:
    async with loopback(Reply(parts=[data(wire(content="x"))], end="close")) as server:
        failure = failure_of(await collect(server.base_url))
    assert failure.code == "TRANSPORT"
    assert failure.message.startswith('the stream from provider "test" was interrupted')


async def test_an_empty_body_is_an_empty_response() -> None:
    async with loopback(Reply(parts=[])) as server:
        failure = failure_of(await collect(server.base_url))
    assert failure.code == "EMPTY_RESPONSE"


@pytest.mark.parametrize(
    "line",
    [
        b"data: {not json\n\n",
        b'data: {"choices": "nope"}\n\n',
        b'data: {"choices": [{"delta": {"content": 5}}]}\n\n',
    ],
)
async def test_a_malformed_data_line_is_malformed_response(line: bytes) -> None:
    async with loopback(Reply(parts=[data(wire(content="ok")), line, sse(wire(finish="stop"))])) as server:
        chunks = await collect(server.base_url)
    assert chunks[-2] == BlockEnd(index=0, block=TextBlock("ok"))
    failure = failure_of(chunks)
    assert failure.code == "MALFORMED_RESPONSE"
    assert failure.message.startswith("the provider sent an invalid stream chunk")


async def test_an_error_object_inside_the_stream() -> None:
    body = data({"error": {"message": "Rate limit exceeded", "code": 429}})
    async with loopback(Reply(parts=[body])) as server:
        failure = failure_of(await collect(server.base_url))
    assert (failure.code, failure.status) == ("RATE_LIMIT", 429)


async def test_json_instead_of_a_stream() -> None:
    body = json.dumps({"choices": [{"message": {"content": "hi"}}]}).encode()
    async with loopback(Reply(headers={"content-type": "application/json"}, parts=[body])) as server:
        failure = failure_of(await collect(server.base_url))
    assert failure.code == "MALFORMED_RESPONSE"


async def test_a_stalled_stream_hits_the_idle_timeout_and_the_connection_is_closed() -> None:
    async with loopback(Reply(parts=[data(wire(content="x"))], end="hang")) as server:
        with anyio.fail_after(5):
            chunks = await collect(server.base_url, idle_timeout=0.2)
            await server.client_closed.wait()
    assert failure_of(chunks) == LlmFailure(message='provider "test" sent nothing for 0.2 s', code="TIMEOUT")


async def test_no_answer_at_all_hits_the_idle_timeout() -> None:
    async with loopback(Reply(respond=False)) as server:
        with anyio.fail_after(5):
            failure = failure_of(await collect(server.base_url, idle_timeout=0.2))
    assert failure.code == "TIMEOUT"


async def test_cancellation_mid_stream_propagates_and_the_server_sees_the_connection_closed() -> None:
    llm = LlmRuntime()
    async with loopback(Reply(parts=[data(wire(content="partial"))], end="hang")) as server:
        llm.register("test", OpenAICompatibleAdapter(route(server.base_url), env=ENV))
        seen: list[StreamChunk] = []
        with anyio.fail_after(5):
            with anyio.CancelScope() as scope:
                async with aclosing(llm.stream(hello())) as stream:
                    async for chunk in stream:
                        seen.append(chunk)
                        if isinstance(chunk, TextDelta):
                            scope.cancel()
            assert scope.cancelled_caught
            await server.client_closed.wait()
    assert not any(isinstance(c, Finish) for c in seen)


async def test_cancellation_while_waiting_for_bytes_propagates() -> None:
    llm = LlmRuntime()
    async with loopback(Reply(parts=[data(wire(content="partial"))], end="hang")) as server:
        llm.register("test", OpenAICompatibleAdapter(route(server.base_url), env=ENV))
        seen: list[StreamChunk] = []
        with anyio.move_on_after(0.3) as scope:
            async with aclosing(llm.stream(hello())) as stream:
                async for chunk in stream:
                    seen.append(chunk)
        assert scope.cancelled_caught
        with anyio.fail_after(5):
            await server.client_closed.wait()
    assert seen
    assert not any(isinstance(c, Finish) for c in seen)


async def test_a_missing_key_names_the_variable_and_sends_nothing() -> None:
    async with loopback(Reply(parts=[sse(wire(content="x", finish="stop"))])) as server:
        chunks = await collect(server.base_url, env={})
        assert server.requests == []
    assert failure_of(chunks) == LlmFailure(
        message='provider "test" needs an API key: set the environment variable TEST_KEY',
        code="MISSING_CREDENTIAL",
    )


async def test_the_key_never_appears_in_a_failure_message() -> None:
    async with loopback(error_reply(401, f"Incorrect API key provided: {KEY}")) as server:
        failure = failure_of(await collect(server.base_url))
        assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in failure.message
    assert failure.message == 'provider "test" answered HTTP 401: Incorrect API key provided: ***'


async def test_the_key_is_redacted_from_mid_stream_errors_too() -> None:
    async with loopback(Reply(parts=[data({"error": {"message": f"bad key {KEY}"}})])) as server:
        failure = failure_of(await collect(server.base_url))
    assert KEY not in failure.message


async def test_an_unconfigured_model_is_refused_before_any_request() -> None:
    async with loopback(Reply()) as server:
        chunks = await collect(server.base_url, models=("a", "b"))
        assert server.requests == []
    assert failure_of(chunks) == LlmFailure(
        message='provider "test" does not serve model "m"; configured models: a, b', code="UNKNOWN_MODEL"
    )


async def test_a_shared_client_is_used_and_left_open() -> None:
    async with (
        loopback(Reply(parts=[sse(wire(content="a", finish="stop"))])) as server,
        httpx.AsyncClient() as client,
    ):
        llm = LlmRuntime()
        llm.register("test", OpenAICompatibleAdapter(route(server.base_url), client=client, env=ENV))
        for _ in range(2):
            async with aclosing(llm.stream(hello())) as stream:
                chunks = [c async for c in stream]
            assert chunks[-1] == Finish(reason=FinishStop())
        assert not client.is_closed
        assert len(server.requests) == 2


async def test_a_body_that_cannot_be_decoded_is_malformed() -> None:
    headers = {"content-type": "text/event-stream", "content-encoding": "gzip"}
    async with loopback(Reply(headers=headers, parts=[b"this is not gzip"])) as server:
        failure = failure_of(await collect(server.base_url))
    assert failure.code == "MALFORMED_RESPONSE"
    assert failure.message.startswith('provider "test" sent a body that cannot be decoded')


async def test_comments_rearm_the_idle_timeout() -> None:
    pings: list[bytes | float] = [part for _ in range(5) for part in (0.1, b": keep-alive\n\n")]
    async with loopback(Reply(parts=[*pings, sse(wire(content="late", finish="stop"))])) as server:
        chunks = await collect(server.base_url, idle_timeout=0.3)
    assert chunks[-1] == Finish(reason=FinishStop())


@pytest.mark.parametrize(
    ("error", "code", "status"),
    [
        # LiteLLM's proxy sends the status as a string
        (
            {"message": "litellm.RateLimitError: slow\n\ndown", "type": "throttling_error", "code": "429"},
            "RATE_LIMIT",
            429,
        ),
        ({"message": "upstream failed", "type": None, "code": "500"}, "SERVER", 500),
        ({"message": "bad key", "type": "auth_error", "code": "401"}, "AUTH", 401),
        ({"message": "slow down", "code": 429}, "RATE_LIMIT", 429),
        ({"message": "no such key", "code": 401}, "AUTH", 401),
        # named codes and types, with and without a status
        (
            {"message": "too long", "type": "invalid_request_error", "code": "context_length_exceeded"},
            "CONTEXT_WINDOW_EXCEEDED",
            None,
        ),
        (
            {"message": "too long", "type": "context_length_exceeded", "code": "400"},
            "CONTEXT_WINDOW_EXCEEDED",
            400,
        ),
        (
            {"message": "This model's maximum context length is 8192 tokens", "code": "400"},
            "CONTEXT_WINDOW_EXCEEDED",
            400,
        ),
        ({"message": "You exceeded your current quota", "type": "insufficient_quota"}, "QUOTA", None),
        ({"message": "x", "type": "invalid_request_error", "code": "insufficient_quota"}, "QUOTA", None),
        ({"message": "Incorrect API key provided", "code": "invalid_api_key"}, "AUTH", None),
        ({"message": "Rate limit reached", "type": "rate_limit_error"}, "RATE_LIMIT", None),
        ({"message": "Overloaded", "type": "overloaded_error"}, "SERVER", None),
        ({"message": "The server had an error", "type": "server_error"}, "SERVER", None),
        ({"message": "bad parameter", "type": "invalid_request_error"}, "INVALID_REQUEST", None),
        ({"message": "something", "code": "weird"}, "SERVER", None),
        ({"message": "something", "code": True}, "SERVER", None),
        ({"message": "something", "code": "999"}, "SERVER", None),
    ],
)
async def test_mid_stream_error_objects_are_coded_as_servers_send_them(
    error: dict[str, object], code: str, status: int | None
) -> None:
    reply = Reply(
        headers={"content-type": "text/event-stream", "x-litellm-call-id": "call-7"},
        parts=[data(wire(content="half an ans")), data({"error": error})],
    )
    async with loopback(reply) as server:
        chunks = await collect(server.base_url)
    failure = failure_of(chunks)
    assert (failure.code, failure.status, failure.request_id) == (code, status, "call-7")
    assert failure.message == f"the provider reported an error mid-stream: {error['message']}"


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"x-request-id": "a", "x-litellm-call-id": "b"}, "a"),
        ({"x-litellm-call-id": "b", "cf-ray": "c"}, "b"),
        ({"request-id": "r"}, "r"),
        ({"openai-request-id": "o"}, "o"),
        ({"cf-ray": "8f1c-FRA"}, "8f1c-FRA"),
        ({"x-request-id": " ", "cf-ray": "c"}, "c"),
        ({}, None),
    ],
)
async def test_the_request_id_is_read_from_the_common_headers(
    headers: dict[str, str], expected: str | None
) -> None:
    async with loopback(error_reply(500, "boom", headers)) as server:
        failure = failure_of(await collect(server.base_url))
    assert failure.request_id == expected


async def test_an_http_error_is_coded_by_its_named_code_too() -> None:
    body = json.dumps({"error": {"message": "see your plan", "type": "insufficient_quota", "code": None}})
    reply = Reply(status=429, headers={"content-type": "application/json"}, parts=[body.encode()])
    async with loopback(reply) as server:
        failure = failure_of(await collect(server.base_url))
    assert failure.code == "QUOTA"
