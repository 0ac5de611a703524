"""Every package's `__all__` names exactly what it exports, and each name resolves."""

from __future__ import annotations

import importlib

import pytest

PACKAGES = [
    "dsh.runtime.kernel",
    "dsh.runtime.jsonlines",
    "dsh.runtime.jobs",
    "dsh.runtime.lazy",
    "dsh.runtime.cli",
    "dsh.runtime.host",
    "dsh.runtime.tools",
    "dsh.runtime.agent",
    "dsh.plugins.tool_bash",
    "dsh.plugins.tool_web",
    "dsh.plugins.tool_fs",
    "dsh.plugins.tool_todo",
    "dsh.plugins.subagent",
    "dsh.plugins.tool_subagent",
    "dsh.runtime.prompt",
    "dsh.runtime.session",
    "dsh.runtime.llm",
    "dsh.plugins.llm_openai",
    "dsh.plugins.retry",
    "dsh.replay",
    "dsh.runtime.about",
    "dsh.plugins.compaction",
    "dsh.plugins.acp",
    "dsh.plugins.subagent_acp",
    "dsh.plugins.web",
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
