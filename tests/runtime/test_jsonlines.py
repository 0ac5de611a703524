"""`dsh.runtime.jsonlines`: lines read under a length limit, values decoded under depth and integer-range limits, and
the JSON-RPC line transport over anyio byte streams (a server answers what is malformed, a client skips it)."""

from __future__ import annotations

import io
from typing import Any

import anyio
import msgspec
import pytest
from anyio.abc import ByteReceiveStream, ByteSendStream

from dsh.runtime.jsonlines import (
    JsonLimits,
    JsonLineError,
    JsonLinesTransport,
    decode_line,
    invalid_reason,
    read_lines,
)


def test_read_lines_refuses_a_long_line_by_number_before_reading_it_whole() -> None:
    data = b"a\n" + b"b" * 10 + b"\n" + b"c" * 1000 + b"\nd\n"
    handle = io.BytesIO(data)
    lines = read_lines(handle, max_line=11)
    assert next(lines) == b"a\n"
    assert next(lines) == b"b" * 10 + b"\n", "a line of exactly the limit, newline included, is read"
    with pytest.raises(JsonLineError) as raised:
        next(lines)
    assert (raised.value.rule, raised.value.line) == ("line.too-long", 3)
    assert str(raised.value) == "line 3: the line is longer than 11 bytes (the limit on one line)"
    assert handle.tell() <= 2 + 11 + 12, "no more than the limit (plus one byte) of the long line was read"


def test_read_lines_keeps_a_last_line_without_newline() -> None:
    assert list(read_lines(io.BytesIO(b"x\ny"), max_line=5)) == [b"x\n", b"y"]


@pytest.mark.parametrize(
    ("raw", "rule"),
    [
        (b"[" * 200_000, "line.depth"),
        (b'{"a":' * 129 + b"1" + b"}" * 129, "line.depth"),
        (b'{"a":9223372036854775808}', "line.int-range"),
        (b"[-9223372036854775809]", "line.int-range"),
        (b'{"a":' + b"9" * 5000 + b"}", "line.int-range"),
        (b'{"a":12345678901234567890e400}', "line.int-range"),
        (b'"\xff"', "line.utf8"),
        (b"{nope", "line.json"),
    ],
)
def test_decode_line_refuses(raw: bytes, rule: str) -> None:
    with pytest.raises(JsonLineError) as raised:
        decode_line(raw, line=7)
    assert raised.value.rule == rule
    assert str(raised.value).startswith("line 7: ")


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a":' * 128 + b"1" + b"}" * 128,
        b'{"text":"' + b"[" * 1000 + b'"}',
        b'{"text":"\\"[[[[","n":[9223372036854775807,-9223372036854775808],"s":"99999999999999999999"}',
    ],
)
def test_decode_line_accepts_what_is_within_the_limits(raw: bytes) -> None:
    assert decode_line(raw) == msgspec.json.decode(raw)


@pytest.mark.parametrize(
    ("message", "valid"),
    [
        ({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}, True),
        ({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s"}}, True),
        ({"jsonrpc": "2.0", "id": 1, "result": {}}, True),
        ({"jsonrpc": "2.0", "id": "x", "error": {"code": 1, "message": "m"}}, True),
        ([{"jsonrpc": "2.0", "id": 1, "method": "initialize"}], False),
        ("initialize", False),
        ({"id": 1, "method": "initialize"}, False),
        ({"jsonrpc": "2.0", "id": True, "method": "initialize"}, False),
        ({"jsonrpc": "2.0", "id": 1.5, "method": "initialize"}, False),
        ({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": "x"}, False),
        ({"jsonrpc": "2.0", "id": 1, "result": {}, "error": {}}, False),
        ({"jsonrpc": "2.0"}, False),
    ],
)
def test_what_is_json_rpc(message: object, valid: bool) -> None:
    assert (invalid_reason(message) is None) == valid


class _Bytes(ByteReceiveStream):
    """Bytes handed over in the given chunks, then end of stream."""

    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = list(chunks)
        self.received = 0

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if not self._chunks:
            raise anyio.EndOfStream
        chunk = self._chunks.pop(0)
        self.received += len(chunk)
        return chunk

    async def aclose(self) -> None:
        pass


class _Sink(ByteSendStream):
    def __init__(self) -> None:
        self.data = b""

    async def send(self, item: bytes) -> None:
        self.data += item

    async def aclose(self) -> None:
        pass


def _messages(data: bytes) -> list[Any]:
    return [msgspec.json.decode(line) for line in data.splitlines()]


REQUEST = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}'


@pytest.mark.anyio
async def test_a_server_answers_bad_lines_and_reads_on() -> None:
    long = [b"x" * 50] * 5 + [b"x\n"]  # 251 bytes over six chunks: dropped as it arrives
    chunks = [b"[" * 200 + b"\n", b'{"a":"\xff"}\n', b"[1]\n", *long, REQUEST[:10], REQUEST[10:] + b"\n"]
    sink = _Sink()
    transport = JsonLinesTransport(_Bytes(chunks), sink, answer=True, limits=JsonLimits(max_line=250))
    with anyio.fail_after(5):
        message = await transport.receive()
        assert message == msgspec.json.decode(REQUEST)
        assert await transport.receive() is None
    answers = _messages(sink.data)
    assert [(a["id"], a["error"]["code"]) for a in answers] == [
        (None, -32700),
        (None, -32700),
        (None, -32600),
        (None, -32700),
    ]
    assert "deeper than 128" in answers[0]["error"]["data"]["details"]
    assert "UTF-8" in answers[1]["error"]["data"]["details"]
    assert "longer than 250 bytes" in answers[3]["error"]["data"]["details"]


@pytest.mark.anyio
async def test_a_client_skips_bad_lines_and_a_long_line_ends_the_connection() -> None:
    chunks = [
        b"hello from the agent\n",
        b"[" * 200 + b"\n",
        REQUEST + b"\n",
        b"y" * 300,
        b"\n",
        REQUEST + b"\n",
    ]
    sink = _Sink()
    transport = JsonLinesTransport(_Bytes(chunks), sink, answer=False, limits=JsonLimits(max_line=250))
    with anyio.fail_after(5):
        assert await transport.receive() == msgspec.json.decode(REQUEST)
        assert await transport.receive() is None
    assert sink.data == b"", "a client never answers what the agent prints"


@pytest.mark.anyio
async def test_send_writes_one_message_per_line_and_refuses_after_close() -> None:
    sink = _Sink()
    transport = JsonLinesTransport(_Bytes([]), sink, answer=True)
    await transport.send({"jsonrpc": "2.0", "id": 1, "result": {"text": "é\n"}})
    assert sink.data == '{"jsonrpc":"2.0","id":1,"result":{"text":"é\\n"}}\n'.encode()
    await transport.close()
    with pytest.raises(ConnectionError):
        await transport.send({"jsonrpc": "2.0", "id": 2, "result": {}})
