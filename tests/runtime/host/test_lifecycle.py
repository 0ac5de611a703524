"""`hosted` and `open_host`: the host loads a deployment over a store and undoes it; `--replay LOG` swaps the
deployment's live transport for the recording (through the `dsh.replay` entry point), with or without a deployment,
serving whatever the deployment's route is called."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh.runtime.agent import AGENTS
from dsh.runtime.host import hosted, open_host
from dsh.runtime.kernel import DshError, load_deployment
from dsh.runtime.llm import LLM
from dsh.runtime.session import STORE, SessionStore
from tests.runtime.cli.helpers import deployment

FIXTURES = Path(__file__).parents[3] / "fixtures"
HARNESS = FIXTURES / "harness"
AUTHORED = FIXTURES / "authored"


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
    config.write_text("plugins:\n  - id: prompt\n    use: dsh.runtime.prompt\n")
    with (
        pytest.raises(
            DshError,
            match=r"loads no live model transport \(a plugin that declares a wire transport, such as llm_openai\)",
        ),
        open_host(config, tmp_path / "s.db", replay=HARNESS / "text-turn"),
    ):
        pass


def test_replay_of_a_missing_log_is_one_clear_error(tmp_path: Path) -> None:
    with (
        pytest.raises(
            DshError, match=r"--replay .*nope\.jsonl: no such file or directory; expected a JSONL log"
        ),
        open_host(None, tmp_path / "s.db", replay=tmp_path / "nope.jsonl"),
    ):
        pass


def test_replay_needs_no_deployment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DSH_CONFIG", raising=False)
    with open_host(None, tmp_path / "s.db", replay=AUTHORED / "fs-tools") as host:
        ids = [plugin.id for plugin in host.ctx.loaded_plugins()]
        assert "replay" in ids
        assert "tool-fs" in ids  # replay's own deployment: every core plugin and tool
        assert host.options().provider is not None


def test_replay_serves_a_deployment_route_whatever_it_is_called(tmp_path: Path) -> None:
    config = tmp_path / "deployment.yml"
    config.write_text(
        deployment("http://127.0.0.1:9/v1")
    )  # its route is "local"; the recording names another
    with open_host(config, tmp_path / "s.db", replay=AUTHORED / "fs-tools") as host:
        assert host.options().provider == "local"
        assert "local" in host.ctx.get(LLM).providers()


def test_hosted_loads_over_the_callers_store_and_undoes_it(tmp_path: Path) -> None:
    config = tmp_path / "deployment.yml"
    config.write_text(deployment("http://127.0.0.1:9/v1"))
    with SessionStore(tmp_path / "s.db") as store:
        with hosted(load_deployment(config), store) as host:
            assert host.ctx.get(STORE) is store
            assert [plugin.id for plugin in host.ctx.loaded_plugins()][-1] == "agent"
        assert host.ctx.disposed
        assert store.sessions() == []  # the store is still the caller's, open


def test_the_host_loads_the_deployment_and_unloads_it(tmp_path: Path) -> None:
    config = tmp_path / "deployment.yml"
    config.write_text(deployment("http://127.0.0.1:9/v1"))
    with open_host(config, tmp_path / "s.db") as host:
        assert host.ctx.get(AGENTS).store is host.store
        options = host.options(cwd=tmp_path)
        assert (options.provider, options.model, options.cwd) == ("local", "m", tmp_path)
    assert host.ctx.disposed


def test_replay_serves_the_provider_flag_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DSH_CONFIG", raising=False)
    with open_host(None, tmp_path / "s.db", replay=AUTHORED / "fs-tools", provider="mine") as host:
        assert host.options().provider == "mine"
        assert "mine" in host.ctx.get(LLM).providers()
