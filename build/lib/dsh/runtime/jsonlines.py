"""JSON lines from outside dsh, read under limits: lines of at most `max_line` bytes (refused before they are held
whole), values nested at most `max_depth` deep with integers in SQLite's 64-bit range; and `JsonLinesTransport`,
JSON-RPC 2.0's newline framing over anyio byte streams (ACP's stdio), decoding with msgspec under the same limits.
"""

from __future__ import annotations

import itertools
import logging
import re
from collections.abc import Iterator
from typing import Any, BinaryIO, Literal

import anyio
import msgspec
from anyio.abc import ByteReceiveStream, ByteSendStream

from dsh.runtime.kernel.errors import DshError

__all__ = [
    "INVALID_REQUEST",
    "MAX_DEPTH",
    "MAX_LINE",
    "PARSE_ERROR",
    "JsonLimits",
    "JsonLineError",
    "JsonLinesTransport",
    "check_depth",
    "check_value",
    "decode_line",
    "invalid_reason",
    "read_lines",
]

MAX_LINE = 50 * 1024 * 1024
"""The longest line read by default (50 MiB): a prompt, a tool result or an answer may carry whole files."""
MAX_DEPTH = 128
"""The deepest nesting of arrays and objects read by default; dsh's own events nest about ten deep."""
INT_MIN, INT_MAX = -(2**63), 2**63 - 1  # SQLite's INTEGER, and what the original's readers keep exactly

PARSE_ERROR = -32700
INVALID_REQUEST = -32600

Rule = Literal["line.too-long", "line.depth", "line.int-range", "line.utf8", "line.json"]

log = logging.getLogger("dsh.jsonlines")


class JsonLimits(msgspec.Struct, frozen=True, kw_only=True):
    """How much of outside JSON dsh reads: bytes per line and nesting depth."""

    max_line: int = MAX_LINE
    max_depth: int = MAX_DEPTH


class JsonLineError(DshError, ValueError):
    """A line of JSON input breaks a limit or is not JSON. `rule` names what it breaks; `line` is 1-based when the
    reader counts lines."""

    def __init__(self, message: str, *, rule: Rule, line: int | None = None) -> None:
        super().__init__(f"line {line}: {message}" if line is not None else message)
        self.reason = message
        self.rule = rule
        self.line = line


# ---------------------------------------------------------------- lines of a file


def read_lines(handle: BinaryIO, *, max_line: int = MAX_LINE) -> Iterator[bytes]:
    """The lines of `handle` (each with its newline, the last possibly without). A line longer than `max_line`
    bytes raises `JsonLineError` naming its number once `max_line + 1` bytes of it are read: at most that much of
    it is ever held."""
    for number in itertools.count(1):
        line = handle.readline(max_line + 1)
        if not line:
            return
        if len(line) > max_line and not (len(line) == max_line + 1 and line.endswith(b"\n")):
            raise JsonLineError(
                f"the line is longer than {max_line} bytes (the limit on one line)",
                rule="line.too-long",
                line=number,
            )
        yield line


# ---------------------------------------------------------------- values


_STRINGS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKETS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
_NOT_BRACKETS = bytes(set(range(256)) - set(b"[{]}"))
_LONG_NUMBER = re.compile(rb"\d{19}")


def _depth(raw: bytes) -> int:
    """The deepest nesting of arrays and objects in `raw` (brackets inside strings do not count)."""
    steps = _STRINGS.sub(b"", raw).translate(_BRACKETS, _NOT_BRACKETS)
    return max(itertools.accumulate(memoryview(steps).cast("b")), default=0)


def _out_of_range(value: object) -> int | None:
    """The first integer in `value` outside [-2^63, 2^63), or None."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, int) and not isinstance(item, bool):
            if not INT_MIN <= item <= INT_MAX:
                return item
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


def check_depth(raw: bytes, *, max_depth: int = MAX_DEPTH, line: int | None = None) -> None:
    """Refuse `raw` (one JSON text) if it nests deeper than `max_depth`; a cheap count of its brackets decides when
    the exact scan must run."""
    if raw.count(b"[") + raw.count(b"{") > max_depth and _depth(raw) > max_depth:
        raise JsonLineError(
            f"the JSON nests deeper than {max_depth} arrays and objects", rule="line.depth", line=line
        )


def check_value(raw: bytes, *, max_depth: int = MAX_DEPTH, line: int | None = None) -> None:
    """Refuse `raw` (one JSON text) if it nests deeper than `max_depth` or holds an integer outside the signed
    64-bit range; cheap scans decide when the exact checks must run, so ordinary lines cost three scans."""
    check_depth(raw, max_depth=max_depth, line=line)
    if _LONG_NUMBER.search(raw) is not None:
        try:
            value = msgspec.json.decode(raw)
        except msgspec.DecodeError as error:
            # A number past what msgspec decodes at all (an integer of thousands of digits, 1e400) fails here; a
            # caller decoding into Raw fields would skip it unread, so it is refused now. msgspec says which only in
            # its message.
            rule: Rule = "line.int-range" if "out of range" in str(error) else "line.json"
            raise JsonLineError(f"not JSON dsh reads: {error}", rule=rule, line=line) from None
        big = _out_of_range(value)
        if big is not None:
            shown = str(big) if len(str(big)) <= 40 else f"{str(big)[:20]}...({len(str(big))} digits)"
            raise JsonLineError(
                f"the integer {shown} is outside the 64-bit range [-2^63, 2^63)",
                rule="line.int-range",
                line=line,
            )


def decode_line(raw: bytes, *, max_depth: int = MAX_DEPTH, line: int | None = None) -> Any:
    """One JSON text decoded with msgspec under the limits; every refusal is a `JsonLineError`."""
    check_value(raw, max_depth=max_depth, line=line)
    try:
        return msgspec.json.decode(raw)
    except (
        RecursionError
    ):  # deeper than the interpreter's stack allows, below max_depth: refused all the same
        raise JsonLineError("the JSON nests too deep to decode", rule="line.depth", line=line) from None
    except msgspec.DecodeError as error:
        rule: Rule = "line.utf8" if "UTF-8" in str(error) else "line.json"
        raise JsonLineError(f"not JSON: {error}", rule=rule, line=line) from None


# ---------------------------------------------------------------- JSON-RPC over a byte stream pair


def _valid_id(value: object) -> bool:
    return value is None or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def invalid_reason(message: object) -> str | None:
    """Why `message` is not a JSON-RPC 2.0 request, notification or response (None: it is one)."""
    if not isinstance(message, dict):
        kind = (
            "an array (batches are not part of ACP)" if isinstance(message, list) else type(message).__name__
        )
        return f"a JSON-RPC message is a JSON object, got {kind}"
    if message.get("jsonrpc") != "2.0":
        return 'a JSON-RPC message has "jsonrpc": "2.0"'
    if "id" in message and not _valid_id(message["id"]):
        return '"id" must be a string, an integer or null'
    if "method" in message:
        if not isinstance(message["method"], str):
            return '"method" must be a string'
        if "params" in message and not isinstance(message["params"], dict | list):
            return '"params" must be an object or an array'
        return None
    if "id" in message and ("result" in message) != ("error" in message):
        return None  # a response to a request of ours
    return 'a request has "method"; a response has "id" and one of "result" or "error"'


class _TooLong:
    """What `_LineReader.next` returns for a line it discarded for its length."""


_TOO_LONG = _TooLong()


class _LineReader:
    """Lines from a byte stream, holding at most `max_line` bytes of one: a longer line is dropped as it arrives."""

    def __init__(self, stream: ByteReceiveStream, max_line: int) -> None:
        self._stream = stream
        self._max = max_line
        self._buffer = bytearray()
        self._start = 0  # where the unread part of the buffer begins
        self._scanned = 0  # no newline in buffer[start:scanned]

    async def next(self) -> bytes | _TooLong | None:
        """The next line without its newline; `_TOO_LONG` for a line that was dropped; None at end of input."""
        while True:
            end = self._buffer.find(b"\n", self._scanned)
            if end >= 0:
                line = bytes(self._buffer[self._start : end])
                self._start = self._scanned = end + 1
                if self._start > 65536:
                    del self._buffer[: self._start]
                    self._start = self._scanned = 0
                return line if len(line) <= self._max else _TOO_LONG
            self._scanned = len(self._buffer)
            if self._scanned - self._start > self._max:
                await self._drop_rest()
                return _TOO_LONG
            try:
                chunk = await self._stream.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                rest = bytes(self._buffer[self._start :])
                self._buffer.clear()
                self._start = self._scanned = 0
                if not rest:
                    return None
                return rest if len(rest) <= self._max else _TOO_LONG
            self._buffer += chunk

    async def _drop_rest(self) -> None:
        """Drop the current line up to and including its newline, holding no more than one chunk of it."""
        self._buffer.clear()
        self._start = self._scanned = 0
        while True:
            try:
                chunk = await self._stream.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                return
            end = chunk.find(b"\n")
            if end >= 0:
                self._buffer += chunk[end + 1 :]
                return


class JsonLinesTransport:
    """JSON-RPC 2.0 messages as newline-delimited JSON over `receive`/`send` (the `acp` SDK's Transport): `receive()`
    returns the next well-formed message (None at end of input), `send()` writes one message per line and writes
    never interleave.

    What is not a message never reaches the connection above. A server (`answer=True`) answers it itself
    (-32700 for a line that is not JSON, too long or too deep; -32600 for JSON that is not a request, notification
    or response) and reads on, so a bad line never stops it. A client (`answer=False`) logs and skips it: the
    other side owns its conversation; a line too long to read ends the connection, failing what is pending."""

    def __init__(
        self,
        receive: ByteReceiveStream,
        send: ByteSendStream,
        *,
        answer: bool,
        limits: JsonLimits | None = None,
        name: str = "peer",
    ) -> None:
        self._lines = _LineReader(receive, (limits or JsonLimits()).max_line)
        self._send = send
        self._answer = answer
        self._limits = limits or JsonLimits()
        self._name = name
        self._lock = anyio.Lock()
        self._closed = False

    async def send(self, message: dict[str, Any]) -> None:
        line = msgspec.json.encode(message) + b"\n"
        async with self._lock:
            if self._closed:
                raise ConnectionError(f"the JSON-RPC connection to the {self._name} is closed")
            try:
                await self._send.send(line)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as error:
                raise ConnectionError(
                    f"the JSON-RPC connection to the {self._name} is closed: {error}"
                ) from error

    async def receive(self) -> dict[str, Any] | None:
        while True:
            line = await self._lines.next()
            if line is None:
                return None
            if isinstance(line, _TooLong):
                details = f"the line is longer than {self._limits.max_line} bytes"
                if not self._answer:
                    log.warning(
                        "the %s wrote a line longer than %d bytes; the connection is closed",
                        self._name,
                        self._limits.max_line,
                    )
                    return None
                await self._refuse(None, PARSE_ERROR, "Parse error", details)
                continue
            if not line.strip():
                continue
            try:
                message = decode_line(line, max_depth=self._limits.max_depth)
            except JsonLineError as error:
                await self._refuse(None, PARSE_ERROR, "Parse error", error.reason, line)
                continue
            reason = invalid_reason(message)
            if reason is None:
                return dict(message)
            ident = message.get("id") if isinstance(message, dict) and _valid_id(message.get("id")) else None
            await self._refuse(ident, INVALID_REQUEST, "Invalid request", reason, line)

    async def _refuse(self, ident: object, code: int, text: str, details: str, line: bytes = b"") -> None:
        if not self._answer:
            # skipped, not answered: a peer that prints to stdout breaks only its own messages
            log.warning(
                "skipped a line from the %s that is not JSON-RPC (%s): %.200r", self._name, details, line
            )
            return
        log.warning("answered a malformed message with %d: %s", code, details)
        error = {"code": code, "message": text, "data": {"details": details}}
        await self.send({"jsonrpc": "2.0", "id": ident, "error": error})

    async def close(self) -> None:
        # Not under the lock: a send blocked on a full pipe (a peer that stopped reading) must not keep it open.
        if not self._closed:
            self._closed = True
            await self._send.aclose()
