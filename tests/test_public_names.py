"""Every package's `__all__` names exactly what it exports, and each name resolves."""

from __future__ import annotations

import ast
import importlib
import inspect

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


def _lazy_packages() -> list[str]:
    return [name for name in PACKAGES if "_LAZY" in vars(importlib.import_module(name))]


@pytest.mark.parametrize("name", _lazy_packages())
def test_a_lazy_packages_three_lists_agree(name: str) -> None:
    """A lazy package names each public name three times: an import for type checkers, `__all__`, and `_LAZY`
    (name -> submodule). The three must agree, and each name must come from the submodule both say."""
    module = importlib.import_module(name)
    tree = ast.parse(inspect.getsource(module))
    typed: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom) and statement.level == 1:
                    for alias in statement.names:
                        typed[alias.asname or alias.name] = f".{statement.module}"
    lazy: dict[str, str] = vars(module)["_LAZY"]
    assert typed == lazy, "the TYPE_CHECKING imports and _LAZY differ"
    eager = {key for key in vars(module) if key in module.__all__ and key not in lazy}
    assert set(module.__all__) == set(lazy) | eager
