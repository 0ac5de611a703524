"""Prompt golden: what the model sees of a deployment of `dsh.runtime.prompt`, `dsh.runtime.tools` and `tool_fs` (the
rendered system prompt with the file tools' sections, and each tool's name, description and schema)."""

from __future__ import annotations

from syrupy.assertion import SnapshotAssertion

from dsh.plugins.tool_fs import SECTIONS, plugin

from ..tool_host import load_and_view, text


def test_model_view(snapshot: SnapshotAssertion) -> None:
    system, tools = load_and_view(plugin)
    assert [text(section) in system for section in SECTIONS.values()] == [True] * 5
    assert system == snapshot(name="system")
    assert tools == snapshot(name="tools")
