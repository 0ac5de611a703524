"""Prompt golden: what the model sees of a deployment of `dsh.runtime.prompt`, `dsh.runtime.tools` and `tool_bash` (the
rendered system prompt with `tool:bash`, and the tool's description and schema)."""

from __future__ import annotations

from syrupy.assertion import SnapshotAssertion

from dsh.plugins.tool_bash import SECTION, plugin

from ..tool_host import load_and_view, text


def test_model_view(snapshot: SnapshotAssertion) -> None:
    system, tools = load_and_view(plugin)
    assert system.endswith(text(SECTION))
    assert system == snapshot(name="system")
    assert tools == snapshot(name="tools")
