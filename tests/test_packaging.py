"""dsh installs as one import package, `dsh`: every folder of runtime/, plugins/ and replay/ is a package the build
lists, nothing imports the folders under their own top-level names, deployments name plugins by the short names of
the `dsh.plugins` entry points, and the names from before the `dsh` package are refused with the new one."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from dsh.runtime.kernel import PLUGIN_GROUP, ConfigError, Plugin, plugin_names, resolve_plugin

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_build_lists_every_package_under_the_dsh_prefix() -> None:
    listed = set(PYPROJECT["tool"]["setuptools"]["packages"])
    on_disk = {
        "dsh." + ".".join(init.parent.relative_to(ROOT).parts)
        for part in ("runtime", "plugins", "replay")
        for init in (ROOT / part).rglob("__init__.py")
    }
    assert listed == on_disk | {"dsh.examples"}  # examples/: the example deployments and the demo, as data


def test_the_distribution_has_a_name_of_its_own_and_one_license() -> None:
    project = PYPROJECT["project"]
    assert project["name"] == "dsh-runtime"  # `dsh` on PyPI is an unrelated project
    assert project["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")


def test_nothing_imports_the_folders_by_their_top_level_names() -> None:
    # The checkout's root is on sys.path under pytest, so `import runtime` would load a second copy of every module.
    code = (
        "import sys, dsh.runtime.cli.app, dsh.replay, dsh.plugins.llm_openai, dsh.plugins.acp\n"
        "from dsh.runtime.kernel import load_deployment\n"
        "load_deployment('examples/coding-agent.yml')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('runtime', 'plugins', 'replay')))"
    )
    ran = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert ran.stdout.strip() == "[]"


def test_every_short_name_resolves_to_a_plugin() -> None:
    names = plugin_names()
    assert {"prompt", "tools", "llm", "agent", "jobs", "tool_fs", "llm_openai", "replay"} <= set(names)
    for name in names:
        assert isinstance(resolve_plugin(name), Plugin), name
    assert PLUGIN_GROUP == "dsh.plugins"


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("plugins.llm_openai", "`use: llm_openai` (or `use: dsh.plugins.llm_openai`)"),
        ("runtime.prompt", "`use: prompt` (or `use: dsh.runtime.prompt`)"),
        ("plugins.subagent:spawn_plugin", "`use: subagent_spawn`"),
        ("replay.driver._authored:scripted_plugin", "`use: dsh.replay.driver._authored:scripted_plugin`"),
    ],
)
def test_an_old_name_is_refused_with_the_new_one(old: str, new: str) -> None:
    with pytest.raises(ConfigError, match="moved under the `dsh` package") as caught:
        resolve_plugin(old, plugin="p")
    assert new in str(caught.value)


@pytest.mark.parametrize("use", ["", " tool_fs", ".x", "a..b", "x.:plugin"])
def test_a_malformed_name_is_a_config_error(use: str) -> None:
    with pytest.raises(ConfigError, match="is not a plugin name"):
        resolve_plugin(use, plugin="p")


def test_an_unknown_short_name_suggests_the_closest() -> None:
    with pytest.raises(ConfigError, match='did you mean "tool_fs"') as caught:
        resolve_plugin("tool_fss", plugin="p")
    assert "installed: agent," in str(caught.value)
