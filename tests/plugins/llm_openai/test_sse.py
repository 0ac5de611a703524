"""SSE framing: the same events however the bytes are cut and whichever line ending the server uses."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh.plugins.llm_openai._sse import SseDecoder, SseEventTooLarge

payloads = st.lists(
    st.text(st.characters(codec="utf-8", exclude_characters="\r\n"), min_size=1, max_size=20),
    min_size=1,
    max_size=6,
)


def decode_all(parts: list[bytes]) -> list[bytes]:
    decoder = SseDecoder()
    return [event for part in parts for event in decoder.feed(part)]


def cut(data: bytes, points: list[int]) -> list[bytes]:
    bounds = [0, *sorted(p % (len(data) + 1) for p in points), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


@given(
    payloads,
    st.sampled_from([b"\n", b"\r\n", b"\r"]),
    st.lists(st.integers(0, 10_000), max_size=8),
    st.booleans(),
)
def test_events_survive_any_cut_and_any_line_ending(
    texts: list[str], newline: bytes, points: list[int], comments: bool
) -> None:
    stream = b""
    for text in texts:
        if comments:
            stream += b": ping" + newline
        stream += b"data: " + text.encode() + newline + newline
    assert decode_all(cut(stream, points)) == [t.encode() for t in texts]


def test_multiline_data_fields_and_unknown_fields() -> None:
    stream = b"event: message\nid: 7\nretry: 10\ndata:a\ndata:  b\ndata\nfoo: bar\n\n"
    assert decode_all([stream]) == [b"a\n b\n"]


def test_a_crlf_split_between_chunks_and_an_empty_chunk_between_them() -> None:
    assert decode_all([b"data: a\r", b"", b"\n\r", b"\ndata: b\r\n\r\n"]) == [b"a", b"b"]


def test_a_byte_order_mark_is_skipped_even_when_split() -> None:
    assert decode_all([b"\xef", b"\xbb", b"\xbfdata: x\n\n"]) == [b"x"]


def test_an_event_without_its_blank_line_is_not_dispatched() -> None:
    decoder = SseDecoder()
    assert decoder.feed(b"data: [DONE]\n") == []
    assert decoder.feed(b"\n") == [b"[DONE]"]


def test_blank_lines_without_data_dispatch_nothing_and_comments_are_counted() -> None:
    decoder = SseDecoder()
    assert decoder.feed(b"\n\n: keep-alive\n\n\r\n") == []
    assert decoder.comments == 1


def test_a_line_that_never_ends_is_refused_once_it_passes_the_bound() -> None:
    decoder = SseDecoder(max_event_bytes=1000)
    decoder.feed(b"data: ")
    for _ in range(99):
        assert decoder.feed(b"x" * 10) == []
    with pytest.raises(SseEventTooLarge, match="1000 bytes"):
        decoder.feed(b"x" * 10)


def test_data_lines_of_one_event_count_together_and_reset_when_it_ends() -> None:
    decoder = SseDecoder(max_event_bytes=100)
    line = b"data: " + b"y" * 40 + b"\n"
    assert decoder.feed(line + line + b"\n") == [b"y" * 40 + b"\n" + b"y" * 40]
    assert decoder.feed(line + line + b"\n") == [b"y" * 40 + b"\n" + b"y" * 40]
    with pytest.raises(SseEventTooLarge):
        decoder.feed(line + line + line)


def test_comments_and_unknown_fields_do_not_count_once_their_line_ends() -> None:
    decoder = SseDecoder(max_event_bytes=100)
    for _ in range(10):
        assert decoder.feed(b": " + b"p" * 60 + b"\nid: " + b"7" * 60 + b"\n") == []
    assert decoder.feed(b"data: z\n\n") == [b"z"]


def test_a_long_line_in_small_chunks_is_joined_once() -> None:
    decoder = SseDecoder()
    body = b"q" * 200_000
    decoder.feed(b"data: ")
    for start in range(0, len(body), 7):
        assert decoder.feed(body[start : start + 7]) == []
    assert decoder.feed(b"\n\n") == [body]
