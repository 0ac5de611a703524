"""The original's replay forms, read as written: a `request/header` listing its tools by name, the positional
`replay.override.json` (a list of entries, or `{"patches": [...]}`) beside dsh's keyed `override.json`, and
`{{fromRequest:<regex>}}` placeholders filled from the live request."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dsh.replay import OverrideError, ReplayAdapter, ReplayMismatch, load_recording, read_log
from dsh.replay.recordings._placeholders import PlaceholderError, from_request
from dsh.runtime.llm import (
    BlockEnd,
    BlockStart,
    CallId,
    Finish,
    FinishError,
    FinishStop,
    FinishToolCalls,
    LlmFailure,
    MessageId,
    StreamChunk,
    TextBlock,
    TextDelta,
    ToolCallBlock,
    ToolCallDelta,
    ToolSchema,
    UserMessage,
)
from dsh.runtime.session import EpochHeader, HeaderConfig, RequestHeader

from .logs import HARNESS, LogBuilder, text_call
from .test_adapter import Sessions, drain, request

ROOT = Path(__file__).resolve().parents[2]
POSITIONAL = Path(__file__).with_name("original-overrides")
"""The original's positional `replay.override.json` of two recordings, as its harness keeps them."""


def _dsh(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from dsh.runtime.cli import main; main()", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=120,
    )


def _scenario(tmp_path: Path, name: str) -> Path:
    """A copy of fixtures/harness/NAME without its dsh override.json."""
    folder = tmp_path / name
    shutil.copytree(HARNESS / name, folder, ignore=shutil.ignore_patterns("__snapshots__", "override.json"))
    return folder


# ------------------------------------------------------------------ request/header with tool names


def test_a_header_listing_tool_names_reads_exports_and_re_runs(tmp_path: Path) -> None:
    folder = _scenario(tmp_path, "tool-call-turn")
    log = folder / "session.jsonl"
    text = log.read_text()
    assert '"tools":"{{tools}}"' in text
    log.write_text(text.replace('"tools":"{{tools}}"', '"tools":["read","bash","todo_write"]'))
    header = next(e.view() for e, _ in read_log(log).events() if e.type == "request/header")
    assert isinstance(header, RequestHeader)
    assert header.data.header.tools == ("read", "bash", "todo_write")
    assert header.data.header.tool_schemas is None
    store = tmp_path / "s.db"
    imported = _dsh("sessions", "import", str(log), "--store", str(store))
    assert imported.returncode == 0, imported.stderr
    session = imported.stdout.split("as session ")[1].split()[0]
    exported = _dsh("sessions", "export", session, "--store", str(store))
    assert '"tools":["read","bash","todo_write"]' in exported.stdout
    ran = _dsh("replay", str(folder))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "matches the recording" in ran.stderr


def test_a_header_of_schemas_still_gives_them() -> None:
    spec = ToolSchema(name="read", description="d", parameters={"type": "object"})
    full = EpochHeader(config=HeaderConfig(provider="p", model="m"), tools=(spec,))
    assert full.tool_schemas == (spec,)
    assert EpochHeader(config=HeaderConfig(provider="p", model="m"), tools="{{tools}}").tool_schemas is None


# ------------------------------------------------------------------ positional replay.override.json


@pytest.mark.parametrize("name", ["cancel", "error-finish"])
def test_the_originals_positional_override_replays_its_scenario(tmp_path: Path, name: str) -> None:
    folder = _scenario(tmp_path, name)
    shutil.copy(POSITIONAL / f"{name}.json", folder / "replay.override.json")
    ran = _dsh("replay", str(folder))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "matches the recording" in ran.stderr


def _three_calls(tmp_path: Path) -> Path:
    calls: list[list[StreamChunk]] = [
        [
            BlockStart(index=0, block_type="tool-call"),
            BlockEnd(index=0, block=ToolCallBlock(id=CallId("c1"), name="read", arguments="{}")),
            Finish(reason=FinishToolCalls()),
        ],
        text_call("done"),
        text_call("second turn"),
    ]
    log = LogBuilder().add("turn/start", {"turn": 1}).header()
    log.step(1, 1, calls[0]).step(1, 2, calls[1]).add("turn/start", {"turn": 2}).step(2, 1, calls[2])
    return log.write(tmp_path / "session.jsonl")


def _write(tmp_path: Path, doc: object) -> Path:
    path = tmp_path / "replay.override.json"
    path.write_text(json.dumps(doc))
    return path


def _entry(text: str) -> dict[str, object]:
    return {
        "kind": "chunks",
        "chunks": [
            {"type": "block-start", "index": 0, "blockType": "text"},
            {"type": "text-delta", "index": 0, "text": text},
            {"type": "block-end", "index": 0, "block": {"type": "text", "text": text}},
            {"type": "finish", "reason": {"kind": "stop"}},
        ],
    }


def _keys(tmp_path: Path, doc: object) -> list[tuple[int, int, int, str | None]]:
    log = _three_calls(tmp_path)
    root = load_recording(log, override=_write(tmp_path, doc)).root
    return [(e.call.turn, e.call.step, e.call.attempt, e.override) for e in root.entries]


def test_a_list_replaces_the_script_call_by_call_and_drops_what_it_does_not_cover(tmp_path: Path) -> None:
    assert _keys(tmp_path, [_entry("a"), _entry("b")]) == [(1, 1, 1, "replace"), (1, 2, 1, "replace")]


def test_patches_place_by_call_index_and_one_past_the_end_appends(tmp_path: Path) -> None:
    throw = {"kind": "throw", "chunks": [], "message": "busy", "code": "RATE_LIMIT"}
    doc = {"patches": [{"at": 1, "entry": throw}, {"at": 3, "entry": _entry("after")}]}
    assert _keys(tmp_path, doc) == [
        (1, 1, 1, None),
        (1, 2, 1, "throw"),
        (2, 1, 1, None),
        (3, 1, 1, "replace"),
    ]


def test_an_entry_past_a_throw_is_the_same_steps_retry(tmp_path: Path) -> None:
    throw = {"kind": "throw", "chunks": [], "message": "busy", "code": "RATE_LIMIT"}
    keys = _keys(tmp_path, [_entry("a"), _entry("b"), throw, _entry("retried")])
    assert keys[2:] == [(2, 1, 1, "throw"), (2, 1, 2, "replace")]
    keys = _keys(tmp_path, [_entry("a"), _entry("b"), _entry("c"), _entry("next turn")])
    assert keys[3:] == [(3, 1, 1, "replace")]  # after a stop, the next turn's first step
    keys = _keys(tmp_path, {"patches": [{"at": 2, "entry": throw}, {"at": 3, "entry": _entry("retried")}]})
    assert keys[2:] == [(2, 1, 1, "throw"), (2, 1, 2, "replace")]


@pytest.mark.parametrize(
    ("doc", "says"),
    [
        ({"patches": [{"at": 5, "entry": {"kind": "hang"}}]}, "past the derived script's 3 calls"),
        ({"patches": [{"at": 0, "entry": {"kind": "hang"}}, {"at": 0, "entry": {"kind": "hang"}}]}, "repeat"),
        ([{"kind": "sing"}], "replay.override.json is a list of entries"),
        ([{"kind": "hang", "ready": "x"}], "unknown field `ready`"),
    ],
)
def test_a_bad_positional_document_names_the_file_and_the_problem(
    tmp_path: Path, doc: object, says: str
) -> None:
    with pytest.raises(OverrideError, match=r"replay\.override\.json") as caught:
        load_recording(_three_calls(tmp_path), override=_write(tmp_path, doc))
    assert says in str(caught.value)


def test_dsh_keyed_override_wins_when_both_files_are_there(tmp_path: Path) -> None:
    folder = _scenario(tmp_path, "cancel")
    shutil.copy(HARNESS / "cancel" / "override.json", folder / "override.json")
    (folder / "replay.override.json").write_text("not json at all")  # never read
    assert load_recording(folder).root.entries[0].override == "hang"


# ------------------------------------------------------------------ {{fromRequest:<regex>}}


def _said(*texts: str) -> tuple[UserMessage, ...]:
    return tuple(
        UserMessage(id=MessageId(f"m{i}"), content=(TextBlock(text),)) for i, text in enumerate(texts)
    )


def test_a_placeholder_takes_the_last_matchs_first_group_across_split_deltas() -> None:
    chunks: list[StreamChunk] = [
        BlockStart(index=0, block_type="text"),
        TextDelta(index=0, text="the code is {{fromRe"),
        TextDelta(index=0, text=r"quest:code is (\d{4})}}."),
        BlockEnd(index=0, block=TextBlock(r"the code is {{fromRequest:code is (\d{4})}}.")),
        Finish(reason=FinishStop()),
    ]
    out = from_request(chunks, _said("code is 1111", "code is 7788"))
    assert [c.text for c in out if isinstance(c, TextDelta)] == ["the code is 7788", "."]
    assert out[3] == BlockEnd(index=0, block=TextBlock("the code is 7788."))


def test_without_a_group_the_whole_match_fills_tool_arguments() -> None:
    arguments = '{"run":"{{fromRequest:run-[0-9a-f]{4}}}"}'
    chunks: list[StreamChunk] = [
        BlockStart(index=0, block_type="tool-call"),
        ToolCallDelta(index=0, id=CallId("c"), name="ctx", arguments_delta=arguments),
        BlockEnd(index=0, block=ToolCallBlock(id=CallId("c"), name="ctx", arguments=arguments)),
        Finish(reason=FinishToolCalls()),
    ]
    out = from_request(chunks, _said("start run-beef now"))
    assert out[2] == BlockEnd(
        index=0, block=ToolCallBlock(id=CallId("c"), name="ctx", arguments='{"run":"run-beef"}')
    )


def test_chunks_without_a_placeholder_are_served_as_they_are() -> None:
    chunks = text_call("plain")
    assert from_request(chunks, _said("x")) == tuple(chunks)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("{{fromRequest:nothing here (\\d+)}}", "matched nothing"),
        ("{{fromRequest:([}}", "invalid pattern"),
        ("{{fromRequest:open", "unclosed placeholder"),
    ],
)
def test_a_placeholder_that_cannot_be_filled_says_why(text: str, says: str) -> None:
    with pytest.raises(PlaceholderError, match=says):
        from_request(text_call(text), _said("code is 12"))


@pytest.mark.anyio
async def test_the_replay_adapter_fills_placeholders_from_the_live_request_and_keeps_a_failure(
    tmp_path: Path,
) -> None:
    log = LogBuilder().add("turn/start", {"turn": 1}).header()
    log.step(1, 1, text_call("the codeword was {{fromRequest:codeword is (\\w+)}}"))
    log.step(1, 2, text_call("{{fromRequest:absent (\\w+)}}"))
    adapter = ReplayAdapter(load_recording(log.write(tmp_path / "session.jsonl")), sessions=Sessions())
    first = await drain(adapter.stream(request(None, 1, 1, messages=_said("the codeword is MARMALADE"))))
    assert first[1] == TextDelta(index=0, text="the codeword was MARMALADE")
    with pytest.raises(ReplayMismatch, match=r"call \(1,2,1\).*matched nothing"):
        await drain(adapter.stream(request(None, 1, 2, messages=_said("nothing"))))
    with pytest.raises(ReplayMismatch, match="matched nothing"):
        adapter.assert_consumed()


def test_an_error_finish_is_left_alone() -> None:
    chunks = [Finish(reason=FinishError(failure=LlmFailure(message="{{fromRequest:x}}", code="SERVER")))]
    assert from_request(chunks, _said("x")) == tuple(chunks)
