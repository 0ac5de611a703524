"""The plugin: what it registers, its strict config, unloading, the schemas' agreement with the original's, the
sections, and the package's public names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import dsh.plugins.tool_fs as tool_fs
from dsh.plugins.tool_fs import SECTIONS, Config, plugin
from dsh.runtime.kernel import ConfigError, Context, MissingServiceError
from dsh.runtime.prompt import SYSTEM_PROMPT
from dsh.runtime.tools import TOOLS
from dsh.runtime.tools import plugin as tools_plugin

from ..tool_host import model_view, registries, text, tool_host
from .harness import load

# Parameter names, types and required lists of the original's tools (fixtures-harness/text-turn/
# tool-schemas.expected.json for read, write and edit, without its sandbox-escalation parameters, which dsh does
# not have; spec/prompt-and-subagents.md §5 for glob and grep, which that recording did not load).
ORIGINAL: dict[str, tuple[dict[str, str], list[str]]] = {
    "read": ({"file_path": "string", "offset": "number", "limit": "number"}, ["file_path"]),
    "write": ({"file_path": "string", "content": "string"}, ["file_path", "content"]),
    "edit": (
        {"file_path": "string", "old_string": "string", "new_string": "string", "replace_all": "boolean"},
        ["file_path", "old_string", "new_string"],
    ),
    "glob": ({"pattern": "string", "path": "string"}, ["pattern"]),
    "grep": ({"pattern": "string", "path": "string", "include": "string"}, ["pattern"]),
}


def test_registers_the_five_tools_with_the_originals_parameters(tmp_path: Path) -> None:
    fs = load(tmp_path)
    visible = {tool.name: tool for tool in fs.ctx.get(TOOLS).visible()}
    assert sorted(visible) == sorted(ORIGINAL)
    for name, (types, required) in ORIGINAL.items():
        parameters: dict[str, Any] = dict(visible[name].parameters)
        assert {key: spec["type"] for key, spec in parameters["properties"].items()} == types, name
        assert parameters["required"] == required, name
        assert all(spec["description"] for spec in parameters["properties"].values()), name


def test_descriptions_state_the_configured_caps(tmp_path: Path) -> None:
    fs = load(tmp_path, {"read_max_lines": 500, "glob_max_results": 7, "grep_max_matches": 9})
    tools = {tool.name: tool for tool in fs.ctx.get(TOOLS).visible()}
    assert "Returns up to 500 lines" in tools["read"].description
    assert "at most 7" in tools["glob"].description
    assert "at most 9 lines" in tools["grep"].description
    assert (
        "Defaults to (and may not exceed) 500"
        in tools["read"].parameters["properties"]["limit"]["description"]
    )


def test_config_chooses_the_tools(tmp_path: Path) -> None:
    fs = load(tmp_path, {"tools": ["read", "glob", "grep"]})
    assert [tool.name for tool in fs.ctx.get(TOOLS).visible()] == ["glob", "grep", "read"]


@pytest.mark.parametrize(
    ("config", "path"),
    [
        ({"rooot": "/x"}, "$"),
        ({"tools": ["read", "delete"]}, "$.tools[1]"),
        ({"read_max_lines": 0}, "$.read_max_lines"),
        ({"exclude_dirs": ".git"}, "$.exclude_dirs"),
    ],
)
def test_config_is_strict(config: dict[str, Any], path: str) -> None:
    ctx = tool_host()
    with pytest.raises(ConfigError) as caught:
        ctx.plugin(plugin, config)
    assert caught.value.plugin == "tool_fs"
    assert caught.value.path == path
    assert Config() == Config(tools=("read", "write", "edit", "glob", "grep"))


def test_needs_the_prompt_and_the_tool_registry() -> None:
    with pytest.raises(MissingServiceError, match='"system-prompt"'):
        Context().plugin(plugin)
    ctx = tool_host()
    ctx.get(TOOLS)  # both present: it loads
    ctx.plugin(plugin)
    bare = Context()
    bare.plugin(tools_plugin)
    with pytest.raises(MissingServiceError, match='"system-prompt"'):
        bare.plugin(plugin)


def test_unloading_removes_its_tools_and_sections(tmp_path: Path) -> None:
    ctx = tool_host()
    before = registries(ctx)
    loaded = ctx.plugin(plugin)
    system, tools = model_view(ctx)
    assert len(tools) == 5
    assert all(text(section) in system for section in SECTIONS.values())
    loaded.unload()
    assert registries(ctx) == before
    again = ctx.plugin(plugin, {"tools": ["read"]})  # loads cleanly again: nothing was left behind
    assert [tool["name"] for tool in model_view(ctx)[1]] == ["read"]
    again.unload()
    assert registries(ctx) == before


def test_a_tool_left_out_brings_no_section() -> None:
    ctx = tool_host()
    ctx.plugin(plugin, {"tools": ["read", "grep"]})
    system, _ = model_view(ctx)
    shown = [name for name, section in SECTIONS.items() if text(section) in system]
    assert shown == ["read", "grep"]
    assert [name for name, _, _ in ctx.get(SYSTEM_PROMPT).describe()[""]["sections"]] == [
        "harness:identity",
        "deployment:persona",
        "tool:read",
        "tool:grep",
    ]


def test_sections_hold_only_cross_call_habits() -> None:
    assert [(name, s.name, s.order) for name, s in SECTIONS.items()] == [
        ("read", "tool:read", 100),
        ("write", "tool:write", 101),
        ("edit", "tool:edit", 102),
        ("glob", "tool:glob", 103),
        ("grep", "tool:grep", 104),
    ]
    assert "not shell commands like cat" in text(SECTIONS["read"])
    descriptions = {tool.name: tool.description for tool in load(Path.cwd()).ctx.get(TOOLS).visible()}
    for section in SECTIONS.values():
        body = text(section)
        assert "{{" not in body  # no prompt variables: nothing here needs one
        assert "2000" not in body  # caps belong to the descriptions
        assert "KB" not in body
        assert "offset" not in body  # windowed reading is read's semantics: its description says it
    # When to prefer edit is the description's to say, not the section's.
    assert "use edit instead" in descriptions["write"]
    assert "edit" not in text(SECTIONS["write"])


def test_all_is_honest() -> None:
    exported = sorted(tool_fs.__all__)
    assert exported == sorted(set(exported))
    for name in exported:
        assert hasattr(tool_fs, name), name
    public = {
        key
        for key, value in vars(tool_fs).items()
        if not key.startswith("_") and getattr(value, "__module__", "").startswith("dsh.plugins.tool_fs")
    }
    assert public <= set(exported), sorted(public - set(exported))
