"""Workspace instructions in a re-run: the original's agent-instructions recording re-runs with its instruction
messages produced live and byte-equal (its test's mid-tool checkpoint re-applied), and an instruction file edited
since the recording is a divergence that names it."""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio

from dsh.replay import load_scenario, rerun
from dsh.runtime.llm import InstructionsSource
from dsh.runtime.session import UserMessageEvent

from .logs import HARNESS

SCENARIO = HARNESS / "agent-instructions"


def test_the_original_recording_re_runs_with_byte_equal_instruction_messages() -> None:
    result = anyio.run(rerun, load_scenario(SCENARIO))
    assert result.divergence is None
    sent = [
        view.data
        for view in (e.view() for e in result.events)
        if isinstance(view, UserMessageEvent) and isinstance(view.data.source, InstructionsSource)
    ]
    assert [len(m.content) for m in sent] == [
        1,
        2,
        1,
    ]  # the baseline; baseline + nested after the checkpoint; scope
    assert all(isinstance(m.source, InstructionsSource) for m in sent)
    checkpoint = [
        e for e in result.events if e.type == "user/message" and "compacted for this snapshot" in e.data
    ]
    assert len(checkpoint) == 1
    assert checkpoint[0].surface_op is not None


def test_an_instruction_file_edited_since_the_recording_is_a_divergence_naming_it(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    shutil.copytree(SCENARIO / "workspace", workspace, symlinks=True)
    (workspace / "nested" / "AGENTS.canonical.md").write_text("Nested instruction, edited.\n")
    result = anyio.run(lambda: rerun(load_scenario(SCENARIO), workspace=workspace))
    assert result.divergence is not None
    assert "workspace instructions: message 2 differs" in result.divergence
    assert (
        "nested/AGENTS.md: it differs from the recording (digest c446df9a85c7e73a3055f394a4822a19ac9ead5a"
        in (result.divergence)
    )
