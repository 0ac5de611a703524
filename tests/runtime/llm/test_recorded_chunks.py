"""The chunk structs against the original's recorded logs: every chunk decodes and re-encodes byte-equal as JSON,
and `BlockAssembler` rebuilds each recorded assistant message (interrupted ones included)."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from dsh.runtime.llm import (
    BlockAssembler,
    FinishError,
    Message,
    MessageId,
    SubagentReportSource,
    SubagentSettledSource,
    TextDelta,
    TokenUsage,
    UserMessage,
    decode_chunk,
    encode_chunk,
)

from .harness import ALL_CALLS, LOGS, Call, chunk_payloads


def test_the_corpus_is_there() -> None:
    assert len(LOGS) >= 12
    assert len(ALL_CALLS) >= 20


@pytest.mark.parametrize("path", LOGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_recorded_chunk_decodes_and_reencodes_unchanged(path: Path) -> None:
    payloads = chunk_payloads(path)
    assert payloads
    for line_no, payload in payloads:
        chunk = decode_chunk(json.dumps(payload))
        assert json.loads(encode_chunk(chunk)) == payload, f"{path}:{line_no}"


def test_a_chunk_of_an_unknown_type_or_a_mistyped_field_is_refused_an_unknown_field_is_not() -> None:
    with pytest.raises(msgspec.ValidationError, match="Invalid value 'block-middle'"):
        decode_chunk(b'{"type":"block-middle","index":0}')
    # the original adds fields over time: the typed chunk reads what dsh models, the log keeps the rest as written
    assert decode_chunk(b'{"type":"text-delta","index":0,"text":"x","extra":1}') == TextDelta(
        index=0, text="x"
    )
    with pytest.raises(msgspec.ValidationError, match=r"Expected `str`, got `int` - at `\$.text`"):
        decode_chunk(b'{"type":"text-delta","index":0,"text":1}')


def as_json(value: object) -> object:
    return json.loads(msgspec.json.encode(value))


def _assembled(call: Call) -> BlockAssembler:
    assembler = BlockAssembler()
    for payload in call.chunks:
        assembler.feed(decode_chunk(json.dumps(payload)))
    return assembler


FINISHED = [c for c in ALL_CALLS if c.finish is not None and c.finish["reason"]["kind"] != "error"]


@pytest.mark.parametrize("call", FINISHED, ids=lambda c: f"{c.log}@{c.key}")
def test_the_assembler_rebuilds_the_recorded_message(call: Call) -> None:
    assert call.message is not None
    source = call.message["source"]
    message = _assembled(call).message(
        id=MessageId(call.message["id"]), provider=source["provider"], model=source["model"]
    )
    assert as_json(message) == {
        "role": "assistant",
        "id": call.message["id"],
        "content": call.message["content"],
        "source": source,
    }
    assembler = _assembled(call)
    assert assembler.usage == (msgspec.convert(call.usage, TokenUsage) if call.usage else None)


@pytest.mark.parametrize(
    "call", [c for c in ALL_CALLS if c.finish is not None and c.finish["reason"]["kind"] == "error"], ids=str
)
def test_failed_calls_assemble_to_an_error_finish_and_no_message(call: Call) -> None:
    assembler = _assembled(call)
    assert assembler.finish is not None
    assert isinstance(assembler.finish.reason, FinishError)
    assert call.message is None


def test_an_interrupted_call_keeps_its_visible_text() -> None:
    (call,) = [c for c in ALL_CALLS if c.interrupted]
    assert call.finish is None
    assert call.message is not None
    content = _assembled(call).interrupted_content()
    assert as_json(content) == call.message["content"]


def _recorded_messages() -> list[tuple[str, dict[str, object]]]:
    out: list[tuple[str, dict[str, object]]] = []
    for path in LOGS:
        for line_no, line in enumerate(path.read_text().splitlines(), 1):
            event = json.loads(line)
            # the current shape only: the older shapes the original still reads (no message id, content beside
            # provenance or callId) are converted by the log's event table, tested with the session log
            if event["type"] == "user/message" and "id" in event["data"]:
                out.append((f"{path.parent.name}:{line_no}", event["data"]))
            elif event["type"] in ("assistant/message", "tool/result") and "message" in event["data"]:
                out.append((f"{path.parent.name}:{line_no}", event["data"]["message"]))
    # a source kind dsh does not model reads as OtherSource, keeping the payload as written: not this test's
    return [(where, m) for where, m in out if _source_kind(m) in _MODELLED_SOURCES]


def _source_kind(message: dict[str, object]) -> object:
    source = message.get("source")
    return source.get("kind") if isinstance(source, dict) else None


_MODELLED_SOURCES = {"user", "plugin", "tool", "model", "subagent-report", "subagent-settled"}
MESSAGES = _recorded_messages()


#: Plugin-private fields of a plugin source that the struct does not model; the session log keeps payloads as
#: written, so they survive storage without the struct (the original's system-prompt plugin writes `sections`).
UNMODELLED_PLUGIN_SOURCE_FIELDS = {"sections"}
#: Likewise of a user source: the original's ACP front end writes the JSON-RPC id of the prompt (`rpcId`).
UNMODELLED_USER_SOURCE_FIELDS = {"rpcId"}


def test_the_originals_subagent_sources_decode_typed_and_reencode_unchanged() -> None:
    """The original's `subagent-report` and `subagent-settled` sources are typed (the sender's session id read),
    not `OtherSource`, and keep their bytes."""
    seen: set[type] = set()
    for where, payload in MESSAGES:
        source = payload["source"]
        assert isinstance(source, dict)
        if source["kind"] not in ("subagent-report", "subagent-settled"):
            continue
        message = msgspec.json.decode(json.dumps(payload), type=UserMessage)
        assert isinstance(message.source, SubagentReportSource | SubagentSettledSource), where
        assert message.source.sender_session_id == source["senderSessionId"], where
        assert (
            msgspec.json.encode(message.source)
            == json.dumps(source, separators=(",", ":"), ensure_ascii=False).encode()
        ), where
        seen.add(type(message.source))
    assert seen == {SubagentReportSource, SubagentSettledSource}


def test_every_recorded_message_decodes_and_reencodes_unchanged() -> None:
    assert len(MESSAGES) >= 50
    decoder = msgspec.json.Decoder(Message)
    for where, payload in MESSAGES:
        message = decoder.decode(json.dumps(payload))
        expected = dict(payload)
        source = payload["source"]
        assert isinstance(source, dict)
        if source["kind"] == "plugin":
            expected["source"] = {k: v for k, v in source.items() if k not in UNMODELLED_PLUGIN_SOURCE_FIELDS}
        if source["kind"] == "user":
            expected["source"] = {k: v for k, v in source.items() if k not in UNMODELLED_USER_SOURCE_FIELDS}
        assert as_json(message) == expected, where
