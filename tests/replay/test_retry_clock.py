"""A replay takes retry's waits on the clock it provides (`RETRY_CLOCK`), on which no wait takes time, and leaves
retry's config as the deployment says: the wait is decided and logged (`delayMs`, `policyKey`) as in a live run,
and never slept, whether the recording is served as chunks or on the wire, and whatever the recording's own
retry policy waited."""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
import msgspec
import pytest
import yaml

from dsh.plugins.retry import RETRY_CLOCK, RealTime, RetryConfig, policy_key
from dsh.replay import load_scenario, plugin, rerun, with_replay
from dsh.replay.driver._plugin import NO_WAIT
from dsh.replay.driver._wire import wire_replay_plugin
from dsh.runtime.kernel import load_deployment
from dsh.runtime.llm import wire_transport

ROOT = Path(__file__).parents[2]
RETRY = ROOT / "fixtures" / "harness" / "empty-response-retry"
HOUR_MS = 3_600_000


@pytest.fixture
def never_sleeps(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Real time, the clock retry falls back to, records each wait instead of sleeping it."""
    slept: list[int] = []

    async def wait(self: RealTime, ms: int) -> None:
        slept.append(ms)

    monkeypatch.setattr(RealTime, "wait", wait)
    return slept


def _an_hours_wait(tmp_path: Path) -> Path:
    directory = tmp_path / "scenario"
    shutil.copytree(RETRY, directory, ignore=shutil.ignore_patterns("__snapshots__"))
    doc = yaml.safe_load((directory / "scenario.yml").read_text())
    doc["overlay"] = {"retry": {"base_delay_ms": HOUR_MS, "max_delay_ms": HOUR_MS, "jitter": 0.0}}
    (directory / "scenario.yml").write_text(yaml.safe_dump(doc))
    return directory


@pytest.mark.parametrize("wire", [False, True], ids=["chunks", "wire"])
def test_a_replay_logs_the_deployments_wait_and_does_not_take_it(
    tmp_path: Path, never_sleeps: list[int], wire: bool
) -> None:
    scenario = load_scenario(_an_hours_wait(tmp_path))
    result = anyio.run(lambda: rerun(scenario, wire=wire))
    assert result.divergence is None  # the recording waited 1 ms under another policy: not compared
    retries = [msgspec.json.decode(event.data) for event in result.events if event.type == "llm/retry"]
    config = RetryConfig(base_delay_ms=HOUR_MS, max_delay_ms=HOUR_MS, jitter=0.0)
    assert [(r["delayMs"], r["policyKey"]) for r in retries] == [(HOUR_MS, policy_key(config))]
    assert never_sleeps == []  # not real time: the replay's clock
    assert result.text == "Recovered."


def test_every_replay_plugin_provides_the_clock_that_does_not_wait() -> None:
    deployment = load_deployment(ROOT / "replay" / "default-deployment.yml")
    transport = next(t for e in deployment.plugins if (t := wire_transport(e.plugin)) is not None)
    for replay in (plugin, wire_replay_plugin(transport, None)):
        assert RETRY_CLOCK in replay.provides
    swapped = with_replay(None, RETRY)  # `dsh run|chat|acp --replay LOG`
    assert [e.plugin for e in swapped.plugins if e.plugin.name == "replay"] == [plugin]
    retry = next(e for e in swapped.plugins if e.plugin.name == "retry")
    assert retry.config == RetryConfig()  # left as the deployment says


def test_the_replays_clock_ends_a_wait_at_once_and_stays_cancellable() -> None:
    async def main() -> None:
        await NO_WAIT.wait(HOUR_MS)
        with anyio.CancelScope() as scope:
            scope.cancel()
            await NO_WAIT.wait(HOUR_MS)
            pytest.fail("a cancelled wait returned")

    anyio.run(main)
