"""The retry policy: back-off and Retry-After arithmetic, and the plugin answering agent/request-error in a real loop
(retry logged as llm/retry then llm/retry-started, the new attempt in the same step, give-up after max_retries)."""

from __future__ import annotations

from pathlib import Path

import anyio
import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh.plugins.retry import RETRY_CLOCK, RetryConfig, delay_ms, plugin
from dsh.runtime.agent import AGENTS, EVENT, AgentEvent
from dsh.runtime.llm import LlmFailure
from dsh.runtime.session import STORE
from tests.runtime.agent.harness import OPTIONS, ScriptedAdapter, event_types, failure, host, text

SERVER = LlmFailure(message="boom", code="SERVER")


def test_backoff_doubles_up_to_the_cap_without_jitter() -> None:
    config = RetryConfig(base_delay_ms=500, max_delay_ms=10_000, jitter=0)
    assert [delay_ms(config, n, SERVER, "k") for n in range(1, 8)] == [
        500,
        1000,
        2000,
        4000,
        8000,
        10_000,
        10_000,
    ]


def test_retry_after_wins_when_longer_but_never_past_the_cap() -> None:
    config = RetryConfig(base_delay_ms=500, max_delay_ms=10_000, jitter=0)
    later = msgspec.structs.replace(SERVER, provider_retry_after_ms=3_000)
    assert delay_ms(config, 1, later, "k") == 3_000
    much_later = msgspec.structs.replace(SERVER, provider_retry_after_ms=60_000)
    assert delay_ms(config, 1, much_later, "k") == 10_000


@given(retry=st.integers(1, 12), key=st.text(max_size=20), jitter=st.floats(0, 1))
def test_jitter_stays_within_the_wait_and_is_the_same_for_the_same_call(
    retry: int, key: str, jitter: float
) -> None:
    config = RetryConfig(jitter=jitter)
    full = min(config.max_delay_ms, config.base_delay_ms * 2 ** (retry - 1))
    wait = delay_ms(config, retry, SERVER, key)
    assert round(full * (1 - jitter)) <= wait <= full
    assert wait == delay_ms(config, retry, SERVER, key)


@pytest.mark.parametrize(
    "bad",
    [{"max_retries": -1}, {"base_delay_ms": 20, "max_delay_ms": 10}, {"jitter": 1.5}],
)
def test_bad_config_is_refused_with_the_reason(bad: dict[str, object]) -> None:
    with pytest.raises(msgspec.ValidationError, match=next(iter(bad))):
        msgspec.convert(bad, RetryConfig)


FAST = RetryConfig(base_delay_ms=1, max_delay_ms=4, max_retries=2)


@pytest.mark.anyio
async def test_a_retryable_failure_is_retried_in_the_same_step_and_logged(tmp_path: Path) -> None:
    adapter = ScriptedAdapter([failure("SERVER"), text("recovered")])
    with host(tmp_path, adapter) as ctx:
        ctx.plugin(plugin, FAST)
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            outcome = await agent.run("go")
        store = ctx.get(STORE)
        types = event_types(store, agent.id)
        retry = msgspec.json.decode(next(iter(store.events(agent.id, types=("llm/retry",)))).data)
    assert outcome.kind == "completed"
    finish = types.index("llm/retry") - 1
    assert types[finish : finish + 4] == [
        "assistant/chunk",
        "llm/retry",
        "llm/retry-started",
        "assistant/chunk",
    ]
    assert types.count("step/start") == 1
    assert retry["retry"] == 1
    assert retry["maxRetries"] == 2
    assert retry["failure"]["code"] == "SERVER"
    assert 0 < retry["delayMs"] <= 4
    assert [r.call.attempt for r in adapter.requests if r.call] == [1, 2]


@pytest.mark.anyio
async def test_retries_stop_after_max_retries_and_the_turn_fails(tmp_path: Path) -> None:
    adapter = ScriptedAdapter([failure("RATE_LIMIT")] * 3)
    with host(tmp_path, adapter) as ctx:
        ctx.plugin(plugin, FAST)
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            outcome = await agent.run("go")
        types = event_types(ctx.get(STORE), agent.id)
    assert outcome.kind == "error"
    assert outcome.failure is not None
    assert outcome.failure.code == "RATE_LIMIT"
    assert types.count("llm/retry") == 2
    assert len(adapter.requests) == 3


@pytest.mark.anyio
async def test_a_failure_outside_the_policy_is_not_retried(tmp_path: Path) -> None:
    adapter = ScriptedAdapter([failure("AUTH")])
    with host(tmp_path, adapter) as ctx:
        ctx.plugin(plugin, FAST)
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            outcome = await agent.run("go")
        types = event_types(ctx.get(STORE), agent.id)
    assert outcome.kind == "error"
    assert "llm/retry" not in types


@pytest.mark.anyio
async def test_cancelling_during_the_wait_aborts_the_turn(tmp_path: Path) -> None:
    slow = RetryConfig(base_delay_ms=60_000, max_delay_ms=60_000, jitter=0)
    adapter = ScriptedAdapter([failure("SERVER"), text("next turn")])
    with host(tmp_path, adapter) as ctx:
        ctx.plugin(plugin, slow)
        decided = anyio.Event()

        async def on_event(event: AgentEvent) -> None:
            if event.event.type == "llm/retry":
                decided.set()

        ctx.on(EVENT, on_event)
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            async with anyio.create_task_group() as group:

                async def run() -> None:
                    await agent.run("go")

                group.start_soon(run)
                await decided.wait()
                group.cancel_scope.cancel()
            outcome = await agent.run("again")
        ends = [e.data for e in ctx.get(STORE).events(agent.id, types=("turn/end",))]
    assert '"kind":"aborted"' in ends[0]
    assert outcome.kind == "completed"


class _TakenClock:
    """A retry clock on which no time passes: it notes each wait it is asked for and returns."""

    def __init__(self) -> None:
        self.waits: list[int] = []

    async def wait(self, ms: int) -> None:
        self.waits.append(ms)


@pytest.mark.anyio
async def test_the_waits_are_taken_on_the_provided_clock(tmp_path: Path) -> None:
    slow = RetryConfig(base_delay_ms=60_000, max_delay_ms=120_000, max_retries=2, jitter=0)
    adapter = ScriptedAdapter([failure("SERVER"), failure("SERVER"), text("recovered")])
    clock = _TakenClock()
    with host(tmp_path, adapter) as ctx:
        ctx.provide(RETRY_CLOCK, clock)
        ctx.plugin(plugin, slow)
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            with anyio.fail_after(30):  # an hour of real waits if the clock were ignored
                outcome = await agent.run("go")
        store = ctx.get(STORE)
        logged = [
            msgspec.json.decode(e.data)["delayMs"] for e in store.events(agent.id, types=("llm/retry",))
        ]
    assert outcome.kind == "completed"
    assert clock.waits == logged == [60_000, 120_000]
