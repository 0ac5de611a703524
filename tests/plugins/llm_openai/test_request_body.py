"""What the adapter sends: headers, the body, and history serialised as spec §5 says."""

from __future__ import annotations

from typing import Any

import pytest

from dsh.runtime.llm import (
    AssistantMessage,
    CallConfig,
    CallId,
    FinishError,
    ImageBlock,
    LlmRequest,
    MessageId,
    ModelSource,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSchema,
    ToolSource,
    UserMessage,
)

from .helpers import KEY, collect, wire
from .loopback import Reply, loopback, sse

pytestmark = pytest.mark.anyio

SOURCE = ModelSource(provider="test", model="m")
TOOL = ToolSchema(
    name="bash",
    description="Run a command.",
    parameters={"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
)


def history() -> tuple[UserMessage | AssistantMessage, ...]:
    return (
        UserMessage(
            id=MessageId("u1"),
            content=(TextBlock("look at this"), ImageBlock(data="iVBORw0K", mime_type="image/png")),
        ),
        AssistantMessage(
            id=MessageId("a1"),
            content=(
                ReasoningBlock("I should list."),
                ToolCallBlock(CallId("c1"), "bash", '{"command":"ls"}'),
                ToolCallBlock(CallId("c2"), "bash", '{"command":"true"}'),
            ),
            source=SOURCE,
        ),
        UserMessage(
            id=MessageId("t1"),
            content=(
                ToolResultBlock(tool_call_id=CallId("c1"), content=(TextBlock("a.txt"), TextBlock("b.txt"))),
                ToolResultBlock(tool_call_id=CallId("c2"), content=(), is_error=False),
            ),
            source=ToolSource(CallId("c1")),
        ),
        UserMessage(
            id=MessageId("t2"),
            content=(
                ToolResultBlock(
                    tool_call_id=CallId("c3"), content=(ImageBlock(data="AAAA", mime_type="image/jpeg"),)
                ),
                TextBlock("and then"),
            ),
        ),
        AssistantMessage(id=MessageId("a2"), content=(TextBlock("Two "), TextBlock("files.")), source=SOURCE),
        UserMessage(id=MessageId("u2"), content=(TextBlock("thanks"),)),
    )


async def sent(request: LlmRequest) -> tuple[dict[str, str], Any]:
    async with loopback(Reply(parts=[sse(wire(content="ok", finish="stop"))])) as server:
        await collect(server.base_url, request)
        (received,) = server.requests
    assert (received.method, received.path) == ("POST", "/v1/chat/completions")
    return received.headers, received.json()


async def test_the_body_serialises_history_tools_and_config() -> None:
    request = LlmRequest(
        provider="test",
        model="deepseek-v4-flash",
        system="You are dsh.",
        messages=history(),
        tools=(TOOL,),
        config=CallConfig(temperature=0.2, max_tokens=4096, reasoning_effort="high", stop=("END",)),
        session_id="s-1",
    )
    headers, body = await sent(request)
    assert headers["authorization"] == f"Bearer {KEY}"
    assert headers["accept"] == "text/event-stream"
    assert headers["content-type"] == "application/json"
    assert headers["x-dsh-session-id"] == "s-1"
    assert body == {
        "model": "deepseek-v4-flash",
        "messages": [
            {"role": "system", "content": "You are dsh."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "look at this"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0K"}},
                ],
            },
            {
                "role": "assistant",
                "content": "",
                "reasoning_content": "I should list.",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "bash", "arguments": '{"command":"ls"}'},
                    },
                    {
                        "id": "c2",
                        "type": "function",
                        "function": {"name": "bash", "arguments": '{"command":"true"}'},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "a.txt\nb.txt"},
            {"role": "tool", "tool_call_id": "c2", "content": "(no output)"},
            {
                "role": "tool",
                "tool_call_id": "c3",
                "content": "[image image/jpeg omitted: images are sent only in user messages]",
            },
            {"role": "user", "content": "and then"},
            {"role": "assistant", "content": "Two files."},
            {"role": "user", "content": "thanks"},
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": [
            {
                "type": "function",
                "function": {"name": "bash", "description": "Run a command.", "parameters": TOOL.parameters},
            }
        ],
        "thinking": {"type": "enabled"},
        "reasoning_effort": "high",
        "temperature": 0.2,
        "max_tokens": 4096,
        "stop": ["END"],
    }


async def test_a_minimal_request_sends_no_optional_fields() -> None:
    request = LlmRequest(
        provider="test", model="m", messages=(UserMessage(id=MessageId("u"), content=(TextBlock("hi"),)),)
    )
    headers, body = await sent(request)
    assert body == {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    assert "x-dsh-session-id" not in headers


async def test_reasoning_effort_off_disables_thinking() -> None:
    request = LlmRequest(
        provider="test",
        model="m",
        messages=(UserMessage(id=MessageId("u"), content=(TextBlock("hi"),)),),
        config=CallConfig(reasoning_effort="off"),
    )
    _, body = await sent(request)
    assert body["thinking"] == {"type": "disabled"}
    assert "reasoning_effort" not in body


async def test_an_unsupported_reasoning_effort_is_refused_before_any_request() -> None:
    request = LlmRequest(
        provider="test",
        model="m",
        messages=(UserMessage(id=MessageId("u"), content=(TextBlock("hi"),)),),
        config=CallConfig(reasoning_effort="extreme"),
    )
    async with loopback(Reply()) as server:
        (chunk,) = await collect(server.base_url, request)
        assert server.requests == []
    reason = getattr(chunk, "reason", None)
    assert isinstance(reason, FinishError)
    assert reason.failure.code == "UNSUPPORTED_REASONING_EFFORT"


async def test_an_image_without_its_bytes_is_refused_before_any_request() -> None:
    # the original's web app logs an uploaded image as an attachment reference; dsh keeps it but cannot send it
    image = ImageBlock(attachment={"attachmentId": "sha256:ab", "mediaType": "image/png"})
    request = LlmRequest(
        provider="test",
        model="m",
        messages=(UserMessage(id=MessageId("u"), content=(TextBlock("see"), image)),),
    )
    async with loopback(Reply()) as server:
        (chunk,) = await collect(server.base_url, request)
        assert server.requests == []
    reason = getattr(chunk, "reason", None)
    assert isinstance(reason, FinishError)
    assert reason.failure.code == "UNSUPPORTED_CONTENT"
    assert "sha256:ab" in reason.failure.message


async def test_a_route_without_a_key_sends_no_authorization_and_its_own_headers() -> None:
    async with loopback(Reply(parts=[sse(wire(content="ok", finish="stop"))])) as server:
        await collect(server.base_url, env={}, api_key_env=None, headers={"x-extra": "1"})
        (received,) = server.requests
    assert "authorization" not in received.headers
    assert received.headers["x-extra"] == "1"
