"""Server-sent events framing (the WHATWG EventSource rules), for byte chunks cut anywhere.

Lines end with CRLF, LF or CR; `data:` lines (one optional space after the colon) accumulate and a blank line
dispatches them joined by LF; lines starting with `:` are comments; `event`, `id` and `retry` are accepted and
ignored (chat completions uses none of them); an unknown field is ignored, as the standard says. At end of stream
an event not terminated by a blank line is discarded, as the standard says: the adapter then reports the missing
`[DONE]`.
"""

from __future__ import annotations

__all__ = ["SseDecoder"]


class SseDecoder:
    """Feed it bytes as they arrive; it returns the `data` of every event completed by them."""

    __slots__ = ("_buffer", "_data", "_skip_lf", "_started", "comments")

    def __init__(self) -> None:
        self._buffer = b""
        self._data: list[bytes] = []
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
                continue
            if line.startswith(b"data:"):
                value = line[5:]
                data.append(value[1:] if value.startswith(b" ") else value)
            elif line == b"data":
                data.append(b"")
            elif line.startswith(b":"):
                self.comments += 1
            # Other fields (event, id, retry, anything else) carry nothing chat completions uses.
        return events
