"""Golden snapshots of what the model sees of this package: each tool's name, description and schema, and the
prompt sections' text."""

from __future__ import annotations

from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.json import JSONSnapshotExtension

from plugins.tool_fs import SECTIONS, Config, tools


def test_tool_definitions(snapshot: SnapshotAssertion) -> None:
    definitions = [
        {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
        for tool in tools(Config())
    ]
    assert definitions == snapshot(extension_class=JSONSnapshotExtension)


def test_sections(snapshot: SnapshotAssertion) -> None:
    sections = [{"name": name, "order": order, "text": text} for name, order, text in SECTIONS]
    assert sections == snapshot(extension_class=JSONSnapshotExtension)
