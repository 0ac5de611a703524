"""Every package's `__all__` names exactly what it exports, and each name resolves."""

from __future__ import annotations

import importlib

import pytest

PACKAGES = [
    "runtime.kernel",
    "runtime.jsonlines",
    "runtime.lazy",
    "runtime.cli",
    "runtime.host",
    "runtime.tools",
    "runtime.agent",
    "plugins.tool_bash",
    "plugins.tool_web",
    "plugins.tool_fs",
    "plugins.tool_todo",
    "plugins.subagent",
    "plugins.tool_subagent",
    "runtime.prompt",
    "runtime.session",
    "runtime.llm",
    "plugins.llm_openai",
    "plugins.retry",
    "replay",
    "plugins.compaction",
    "plugins.acp",
    "plugins.subagent_acp",
]


@pytest.mark.parametrize("name", PACKAGES)
def test_all_is_honest(name: str) -> None:
    module = importlib.import_module(name)
    exported = sorted(module.__all__)
    assert exported == sorted(set(exported)), "no duplicates"
    for attribute in exported:
        assert hasattr(module, attribute), f"{name}.{attribute} is listed but missing"
    public = {
        key
        for key, value in vars(module).items()
        if not key.startswith("_") and getattr(value, "__module__", "").startswith(name)
    }
    assert public <= set(exported), f"public but unlisted: {sorted(public - set(exported))}"
