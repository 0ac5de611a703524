"""The bundled example deployments and demo recording, by name: `--config coding-agent`, `--replay demo`; a file of
that name in the current directory wins; an unknown name lists the bundled ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh.runtime.host import DEMO, bundled_deployment, bundled_deployments, bundled_recording
from dsh.runtime.kernel import ConfigError, load_deployment


def test_a_bundled_deployment_is_found_by_name_with_or_without_its_suffix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert bundled_deployments() == ["acp-agent", "coding-agent"]
    found = bundled_deployment(Path("coding-agent"))
    assert found == bundled_deployment(Path("coding-agent.yml"))
    assert found.name == "coding-agent.yml"
    assert load_deployment(found).plugins


def test_a_file_of_that_name_here_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "coding-agent").write_text("plugins: []\n")
    (tmp_path / DEMO).mkdir()
    assert bundled_deployment(Path("coding-agent")) == Path("coding-agent")
    assert bundled_recording(Path(DEMO)) == Path(DEMO)
    assert bundled_deployment(Path("sub/x.yml")) == Path("sub/x.yml")  # a path is never a name


def test_an_unknown_name_lists_the_bundled_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as caught:
        bundled_deployment(Path("codng-agent"))
    assert str(caught.value) == (
        "deployment codng-agent: no such file, and no bundled example deployment of that name; bundled: "
        "acp-agent, coding-agent (e.g. --config coding-agent)"
    )


def test_the_demo_is_a_scenario_with_its_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    demo = bundled_recording(Path(DEMO))
    assert (demo / "scenario.yml").is_file()
    assert (demo / "session.jsonl").is_file()
    assert (demo / "workspace" / "src" / "app.py").is_file()
