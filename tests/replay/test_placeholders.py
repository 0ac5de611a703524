"""`{{cwd}}` in recorded chunks becomes the live workspace, also when a delta boundary splits the placeholder."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from dsh.replay.recordings._placeholders import CWD_PLACEHOLDER, split_like, with_cwd
from dsh.runtime.llm import (
    BlockAssembler,
    BlockEnd,
    BlockStart,
    CallId,
    Finish,
    FinishStop,
    StreamChunk,
    ToolCallBlock,
    ToolCallDelta,
)


def test_a_placeholder_split_across_deltas_is_replaced_whole() -> None:
    arguments = '{"path": "{{cwd}}/a.txt"}'
    parts = ['{"path": "{{c', "wd}}/a", '.txt"}']
    chunks: list[StreamChunk] = [
        BlockStart(index=0, block_type="tool-call"),
        *(
            ToolCallDelta(index=0, id=CallId("c"), name="read" if i == 0 else None, arguments_delta=p)
            for i, p in enumerate(parts)
        ),
        BlockEnd(index=0, block=ToolCallBlock(CallId("c"), "read", arguments)),
        Finish(reason=FinishStop()),
    ]
    served = with_cwd(chunks, "/tmp/live")
    assembler = BlockAssembler()
    for chunk in served:
        assembler.feed(chunk)  # block-end agrees with the rewritten deltas, or this raises
    assert assembler.blocks() == (ToolCallBlock(CallId("c"), "read", '{"path": "/tmp/live/a.txt"}'),)


@given(
    pieces=st.lists(st.sampled_from(["a", "{{cwd}}", "{{", "}}", "cwd", "/x"]), max_size=8),
    cuts=st.lists(st.integers(0, 60), max_size=5),
)
def test_split_like_keeps_the_part_count_and_replaces_every_occurrence(
    pieces: list[str], cuts: list[int]
) -> None:
    whole = "".join(pieces)
    bounds = sorted({min(c, len(whole)) for c in cuts})
    parts = [whole[a:b] for a, b in zip([0, *bounds], [*bounds, len(whole)], strict=True)]
    rewritten = split_like(parts, CWD_PLACEHOLDER, "/w")
    assert len(rewritten) == len(parts)
    assert "".join(rewritten) == whole.replace(CWD_PLACEHOLDER, "/w")
