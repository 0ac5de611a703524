"""The built wheel, as a user outside the checkout gets it: it holds one top-level package, `dsh`, with the example
deployments and the demo recording as package data and the LICENSE; unpacked on the path of a project that has
its own `plugins/` and `runtime/` packages, the hints dsh prints work as written (`dsh replay demo`, `--replay demo`,
`--config coding-agent`)."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = [
    "dsh/examples/coding-agent.yml",
    "dsh/examples/acp-agent.yml",
    "dsh/examples/demo/scenario.yml",
    "dsh/examples/demo/session.jsonl",
    "dsh/examples/demo/replies.yml",
    "dsh/examples/demo/__snapshots__/scenario.ambr",
    "dsh/examples/demo/workspace/src/app.py",
    "dsh/examples/demo/workspace/notes.md",
    "dsh/replay/default-deployment.yml",
]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        # sdist first, then the wheel from it in a fresh directory: as a user's pip builds it, and never from a stale
        # setuptools build/ scratch folder in the checkout (which held an old module once)
        [str(ROOT / "scripts" / "uv"), "build", "--out-dir", str(out), "--quiet"],
        cwd=ROOT,
        check=True,
        timeout=300,
        capture_output=True,
    )
    (built,) = out.glob("dsh_runtime-*.whl")
    return built


@pytest.fixture(scope="module")
def site(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    site = tmp_path_factory.mktemp("site")
    with zipfile.ZipFile(wheel) as opened:
        opened.extractall(site)
    return site


def test_the_wheel_ships_one_package_its_examples_demo_and_license(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as opened:
        names = set(opened.namelist())
    assert {name.split("/")[0] for name in names if not name.startswith("dsh_runtime-")} == {"dsh"}
    assert [name for name in SHIPPED if name not in names] == []
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names)


def dsh(site: Path, cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`dsh ARGS` with the unpacked wheel first on the path (before the checkout's editable install)."""
    keep = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
    return subprocess.run(
        [sys.executable, "-c", "from dsh.runtime.cli import main; main()", *args],
        cwd=cwd,
        env={**keep, "PYTHONPATH": str(site), "NO_COLOR": "1", "COLUMNS": "100", "DSH_CONFIG": "", **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An empty project with its own `plugins` and `runtime` packages (which once shadowed dsh's)."""
    for own in ("plugins", "runtime"):
        (tmp_path / "project" / own).mkdir(parents=True)
        (tmp_path / "project" / own / "__init__.py").write_text("MINE = True\n")
    return tmp_path / "project"


def test_the_hints_work_outside_the_checkout(site: Path, project: Path, tmp_path: Path) -> None:
    store = str(tmp_path / "s.db")
    replayed = dsh(site, project, "replay", "demo", "-q")
    assert replayed.returncode == 0, replayed.stderr
    assert f"replaying {site / 'dsh' / 'examples' / 'demo'}" in replayed.stderr
    assert "matches the recording and its goldens: 1 turn, 6 tool calls" in replayed.stderr
    hint = dsh(site, project, "run", "hi", "--store", store)
    assert hint.returncode == 2
    assert "--config coding-agent is a complete one" in hint.stderr
    assert "--replay demo" in hint.stderr
    work = tmp_path / "work"
    work.mkdir()
    ran = dsh(
        site, project, "run", "fix the greeting", "--replay", "demo", "--cwd", str(work), "--store", store
    )
    assert ran.returncode == 0, ran.stderr
    assert "← hello, dsh" in ran.stdout
    prompt = dsh(site, project, "prompt", "--config", "coding-agent")
    assert prompt.returncode == 0, prompt.stderr
    assert prompt.stdout.startswith("# system prompt")
    checked = dsh(site, project, "config", "check", "acp-agent")
    assert checked.returncode == 0, checked.stderr
