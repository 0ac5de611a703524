"""Where the context window comes from: config `context_windows[model]` (an override), else the session's last
`request/context` for the model (the route's window, as logged), else config `context_window` (the fallback)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh.plugins.compaction import COMPACTION, Config
from dsh.runtime.agent import AGENTS
from dsh.runtime.session import STORE
from tests.runtime.agent.harness import MODEL, OPTIONS, calls, text

from .harness import MeteredScript, blob_tool, compaction_host

pytestmark = pytest.mark.anyio


def test_an_override_beats_the_logged_window_which_beats_the_fallback() -> None:
    config = Config(context_window=64_000, context_windows={"big": 1_000_000})
    assert config.window("big", logged=32_000) == 1_000_000
    assert config.window("other", logged=32_000) == 32_000
    assert config.window("other") == config.window(None) == 64_000


@pytest.mark.parametrize(
    ("stated", "config", "summaries"),
    [
        (
            4096,
            Config(prune=False),
            1,
        ),  # the route's small window, as logged, makes the default config compact
        (128_000, Config(context_window=4096, prune=False), 0),  # a logged window beats the fallback
        (4096, Config(context_windows={MODEL: 128_000}, prune=False), 0),  # an override beats a logged window
        (None, Config(context_window=4096, prune=False), 1),  # nothing logged: the fallback
    ],
)
async def test_compaction_measures_against_the_logged_window(
    tmp_path: Path, stated: int | None, config: Config, summaries: int
) -> None:
    # about 2300 tokens at turn 2 step 2 as the provider counts (twice the meter): past 0.8 * 4096, under 0.8 * 128000
    steps = [
        calls(("c1", "blob", '{"size": 4000}')),
        text("done one"),
        calls(("c2", "blob", '{"size": 4000}')),
    ]
    summary = [text("the summary")] * summaries
    adapter = MeteredScript([*steps, *summary, text("done two")], factor=2, window=stated)
    with compaction_host(tmp_path, adapter, config, tool_list=[blob_tool()]) as ctx:
        service = ctx.get(COMPACTION)
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            await agent.run("one")
            window = service.window(MODEL, agent)
            await agent.run("two")
        types = [e.type for e in ctx.get(STORE).events(agent.id)]
    assert window == config.window(MODEL, stated)
    assert types.count("compaction/summary") == summaries
    assert adapter.unserved() == {}


async def test_a_window_logged_for_another_model_is_not_used(tmp_path: Path) -> None:
    adapter = MeteredScript([text("a")], window=4096)
    with compaction_host(tmp_path, adapter, Config(context_window=64_000)) as ctx:
        service = ctx.get(COMPACTION)
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            await agent.run("one")
            assert service.window(MODEL, agent) == 4096
            assert service.window("another-model", agent) == 64_000
            assert service.window(MODEL) == 64_000  # no agent: no log to read
