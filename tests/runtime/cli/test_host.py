"""`open_host`: the seam where `--replay LOG` will register its adapter refuses clearly while no replay adapter is
installed, and the host undoes what it loaded."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.agent import AGENTS
from runtime.cli import open_host
from runtime.kernel import ConfigError
from tests.runtime.cli.helpers import deployment


def test_replay_without_an_installed_adapter_names_the_entry_point_group(tmp_path: Path) -> None:
    config = tmp_path / "deployment.yml"
    config.write_text(deployment("http://127.0.0.1:9/v1"))
    with (
        pytest.raises(
            ConfigError, match=r"--replay .*session\.jsonl: no replay adapter is installed .*dsh\.replay"
        ),
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
