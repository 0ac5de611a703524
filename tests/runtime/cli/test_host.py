"""`open_host`: `--replay LOG` swaps the deployment's live transport for the recording (through the `dsh.replay`
entry point), and the host undoes what it loaded."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.agent import AGENTS
from runtime.cli import open_host
from runtime.kernel import DshError
from tests.runtime.cli.helpers import deployment


def test_replay_swaps_the_live_transport_for_the_recording(tmp_path: Path) -> None:
    config = tmp_path / "deployment.yml"
    config.write_text(deployment("http://127.0.0.1:9/v1"))
    log = Path(__file__).parents[3] / "fixtures" / "harness" / "text-turn"
    with open_host(config, tmp_path / "s.db", replay=log) as host:
        ids = [plugin.id for plugin in host.ctx.loaded_plugins()]
        assert "replay" in ids
        assert "openai" not in ids


def test_replay_of_a_deployment_without_a_live_transport_says_so(tmp_path: Path) -> None:
    config = tmp_path / "deployment.yml"
    config.write_text("plugins:\n  - id: prompt\n    use: runtime.prompt\n")
    with (
        pytest.raises(DshError, match=r"loads no live transport \(plugins\.llm_openai\)"),
        open_host(config, tmp_path / "s.db", replay=tmp_path / "session.jsonl"),
    ):
        pass


def test_the_host_loads_the_deployment_and_unloads_it(tmp_path: Path) -> None:
    config = tmp_path / "deployment.yml"
    config.write_text(deployment("http://127.0.0.1:9/v1"))
    with open_host(config, tmp_path / "s.db") as host:
        assert host.ctx.get(AGENTS).store is host.store
        options = host.options(cwd=tmp_path)
        assert (options.provider, options.model, options.cwd) == ("local", "m", tmp_path)
    assert host.ctx.disposed
