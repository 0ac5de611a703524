"""Prompt golden: what the model sees of a deployment of `dsh.runtime.prompt`, `dsh.runtime.tools` and `tool_todo` (no
section: the prompt is the identity alone; the tool's description and schema carry everything)."""

from __future__ import annotations

import pytest
from syrupy.assertion import SnapshotAssertion

from dsh.plugins.tool_todo import plugin
from dsh.runtime.prompt import IDENTITY

from ..tool_host import load_and_view


@pytest.mark.parametrize("parallel", [True, False], ids=["parallel", "serial"])
def test_model_view(parallel: bool, snapshot: SnapshotAssertion) -> None:
    system, tools = load_and_view(plugin, {"allow_parallel_in_progress": parallel})
    assert system == IDENTITY
    assert system == snapshot(name="system")
    assert tools == snapshot(name="tools")
