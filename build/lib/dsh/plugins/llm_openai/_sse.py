"""Server-sent events framing (the WHATWG EventSource rules), for byte chunks cut anywhere.

Lines end with CRLF, LF or CR; `data:` lines (one optional space after the colon) accumulate and a blank line
dispatches them joined by LF; lines starting with `:` are comments; `event`, `id` and `retry` are accepted and
ignored (chat completions uses none of them); an unknown field is ignored, as the standard says. At end of stream
an event not terminated by a blank line is discarded, as the standard says: the adapter then reports the missing
`[DONE]`.

An event is bounded: once the bytes of one event (its data lines so far plus the line still arriving) pass
`max_event_bytes`, `feed` raises `SseEventTooLarge` rather than holding a stream that never ends a line. A line
that arrives in many chunks is joined once, when it ends, so a long line costs its length, not its length squared.
"""

from __future__ import annotations

__all__ = ["MAX_EVENT_BYTES", "SseDecoder", "SseEventTooLarge"]

MAX_EVENT_BYTES = 16 * 1024 * 1024
"""The default bound on one event: a chat-completions chunk is a delta of a few hundred bytes; a server that sends
whole messages as one chunk still fits many megabytes of tool arguments."""


class SseEventTooLarge(ValueError):
    """One event passed the decoder's bound before it ended."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"an event passed {limit} bytes before it ended")
        self.limit = limit


class SseDecoder:
    """Feed it bytes as they arrive; it returns the `data` of every event completed by them."""

    __slots__ = (
        "_buffer",
        "_data",
        "_data_bytes",
        "_limit",
        "_pending",
        "_pending_bytes",
        "_skip_lf",
        "_started",
        "comments",
    )

    def __init__(self, *, max_event_bytes: int = MAX_EVENT_BYTES) -> None:
        self._buffer = b""
        self._pending: list[bytes] = []  # chunks of a line still arriving, after `_buffer`
        self._pending_bytes = 0
        self._data: list[bytes] = []
        self._data_bytes = 0
        self._limit = max_event_bytes
        self._started = False
        self._skip_lf = False
        self.comments = 0

    def feed(self, chunk: bytes) -> list[bytes]:
        """The data of each event completed by `chunk`, in order (as UTF-8 bytes)."""
        if not chunk:
            return []
        if self._skip_lf and chunk.startswith(b"\n"):
            # The previous chunk ended with CR, already taken as a line end: this LF completes that CRLF.
            chunk = chunk[1:]
        self._skip_lf = False
        if self._started and b"\n" not in chunk and b"\r" not in chunk:
            # The line goes on: keep the chunk aside and join it once the line ends.
            self._pending.append(chunk)
            self._pending_bytes += len(chunk)
            self._check(len(self._buffer) + self._pending_bytes)
            return []
        if self._pending:
            buffer = b"".join([self._buffer, *self._pending, chunk])
            self._pending.clear()
            self._pending_bytes = 0
        else:
            buffer = self._buffer + chunk if self._buffer else chunk
        if not self._started and buffer:
            if len(buffer) < 3 and b"\xef\xbb\xbf".startswith(buffer):
                self._buffer = buffer
                return []
            self._started = True
            if buffer.startswith(b"\xef\xbb\xbf"):
                buffer = buffer[3:]
        if b"\r" in buffer:
            self._skip_lf = buffer.endswith(b"\r")
            lines = buffer.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
        else:
            lines = buffer.split(b"\n")
        self._buffer = lines.pop()
        events: list[bytes] = []
        data = self._data
        for line in lines:
            if not line:
                if data:
                    events.append(data[0] if len(data) == 1 else b"\n".join(data))
                    data.clear()
                    self._data_bytes = 0
                continue
            if line.startswith(b"data:"):
                value = line[5:]
                value = value[1:] if value.startswith(b" ") else value
                data.append(value)
                self._data_bytes += len(value) + 1
                self._check(0)
            elif line == b"data":
                data.append(b"")
                self._data_bytes += 1
            elif line.startswith(b":"):
                self.comments += 1
            # Other fields (event, id, retry, anything else) carry nothing chat completions uses.
        self._check(len(self._buffer))
        return events

    def _check(self, arriving: int) -> None:
        if self._data_bytes + arriving > self._limit:
            raise SseEventTooLarge(self._limit)
