"""The live view's server-sent events: whatever a model or a tool wrote, each message has exactly the fields dsh put
in it (a CR, an LF or a CRLF in the text becomes another `data:` line, never a field or an event of its own)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from dsh.plugins.web import sse_message


def _parse(stream: str) -> list[dict[str, str]]:
    """Messages as a browser's EventSource reads them (lines end at CR, LF or CRLF; a blank line dispatches)."""
    messages: list[dict[str, str]] = []
    fields: dict[str, str] = {}
    data: list[str] = []
    for line in stream.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if not line:
            if fields or data:
                messages.append({**fields, "data": "\n".join(data)})
            fields, data = {}, []
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            data.append(value)
        else:
            fields[name] = value
    return messages


def test_a_carriage_return_cannot_forge_an_event() -> None:
    forged = "ok\revent: waiting\rdata: <form>\r\rid: 99"
    (message,) = _parse(sse_message("item", forged, id=7))
    assert message == {"event": "item", "id": "7", "data": "ok\nevent: waiting\ndata: <form>\n\nid: 99"}


@given(st.text())
def test_any_text_is_one_message_carrying_it(text: str) -> None:
    (message,) = _parse(sse_message("delta", text))
    assert message["event"] == "delta"
    assert message["data"] == text.replace("\r\n", "\n").replace("\r", "\n")
