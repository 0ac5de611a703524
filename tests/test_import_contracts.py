"""The import contracts (pyproject.toml's [tool.importlinter]) bite: lint-imports, run on a copy of the source with
one deliberate break per contract, reports each break (scripts/check runs them on the real tree)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONTRACTS = {
    contract["name"]: contract
    for contract in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
}
LAYERS = "runtime's layers: kernel < llm < prompt < session < tools < agent < jobs/host < cli"
PLUGINS = "a plugin imports no other plugin, except the service keys and types of a service it uses"
REPLAY_LAYERS = "replay's layers: recordings < script < driver < frontends"

BREAKS = {
    # a lower layer reaching up
    "runtime/kernel/_contract_break.py": "import dsh.runtime.session\n",
    # the model call's layer reaching up to the prompt that assembles parts of it
    "runtime/llm/_contract_break.py": "import dsh.runtime.prompt\n",
    # siblings of one layer importing each other
    "runtime/llm/_sibling_break.py": "import dsh.runtime.jsonlines\n",
    # a plugin importing another plugin beyond the listed service imports
    "plugins/web/_contract_break.py": "import dsh.plugins.stats\n",
    # runtime importing a plugin
    "runtime/tools/_contract_break.py": "import dsh.plugins.tool_fs\n",
    # a front end's shared layer importing the dsh command
    "runtime/host/_contract_break.py": "import dsh.runtime.cli\n",
    # a module that reaches a store backend instead of the store contract
    "runtime/session/_contract_break.py": "import dsh.runtime.session.store.sqlite\n",
    # a new top-level module of runtime/ with no layer
    "runtime/unplaced.py": '"""A module no layer names."""\n',
    # replay's script reaching up to the driver of a re-run
    "replay/script/_contract_break.py": "import dsh.replay.driver._rerun\n",
    # a new module at replay/'s top with no layer
    "replay/unplaced.py": '"""A module no layer names."""\n',
    # the script's knot tied again: the script importing the overrides that edit it (appended to the real module)
    "replay/script/_script.py": "from dsh.replay.script._overrides import Overrides\n",
}


def _lint(tmp_path: Path) -> str:
    script = Path(sys.executable).with_name("lint-imports")
    env = {"PYTHONPATH": str(tmp_path / "src"), "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [str(script), "--no-cache", "--no-logo", str(ROOT / "pyproject.toml")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return result.stdout + result.stderr


@pytest.fixture
def broken_copy(tmp_path: Path) -> Path:
    package = tmp_path / "src" / "dsh"
    package.mkdir(parents=True)
    for part in ("runtime", "plugins", "replay"):
        shutil.copytree(ROOT / part, package / part, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for path, text in BREAKS.items():
        with (package / path).open("a") as file:  # a new module, or one line more in an existing one
            file.write(text)
    return tmp_path


def test_the_contracts_name_the_layers_the_architecture_states() -> None:
    layers = CONTRACTS[LAYERS]
    assert layers["containers"] == ["dsh.runtime"]
    assert layers["exhaustive"] is True
    order = [layer.split("#")[0].replace(" ", "") for layer in layers["layers"]]
    assert order == [
        "cli",
        "host|jobs",
        "agent",
        "tools",
        "session",
        "prompt",
        "llm|jsonlines",
        "kernel",
        "lazy|about",
    ]
    assert CONTRACTS[PLUGINS]["modules"] == ["dsh.plugins.*"]
    replay = CONTRACTS[REPLAY_LAYERS]
    assert replay["containers"] == ["dsh.replay"]
    assert replay["exhaustive"] is True
    assert replay["layers"] == ["frontends", "driver", "script", "recordings"]


def test_each_deliberate_break_fails_its_contract(broken_copy: Path) -> None:
    out = _lint(broken_copy)
    assert f"Contracts: 0 kept, {len(CONTRACTS)} broken" in out, out
    assert "dsh.runtime.kernel is not allowed to import dsh.runtime.session" in out, out
    assert "dsh.runtime.llm is not allowed to import dsh.runtime.prompt" in out, out
    assert "dsh.runtime.llm is not allowed to import dsh.runtime.jsonlines" in out, out
    assert "dsh.plugins.web is not allowed to import dsh.plugins.stats" in out, out
    assert "dsh.runtime is not allowed to import dsh.plugins" in out, out
    assert "dsh.runtime.host is not allowed to import dsh.runtime.cli" in out, out
    assert "dsh.runtime.unplaced" in out, out
    assert "dsh.replay.script is not allowed to import dsh.replay.driver" in out, out
    assert "dsh.replay.unplaced" in out, out
    assert "dsh.replay.script._script is not allowed to import dsh.replay.script._overrides" in out, out
    assert "dsh.runtime.session._contract_break -> dsh.runtime.session.store.sqlite" in out, out
