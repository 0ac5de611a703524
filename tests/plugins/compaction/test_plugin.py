"""The plugin as a host sees it: loading and unloading, strict config, the meter calibrating on responses, and the
runtime-context snapshot sent again when a checkpoint shadowed it."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh.plugins import compaction
from dsh.plugins.compaction import COMPACTION, Calibration, Config
from dsh.runtime.agent import AGENTS
from dsh.runtime.kernel import ConfigError
from dsh.runtime.llm import PluginSource, TextBlock, UserMessage
from dsh.runtime.prompt import SYSTEM_PROMPT, PromptContext
from dsh.runtime.session import STORE
from tests.runtime.agent.harness import OPTIONS, ScriptedAdapter, calls, host, text

from .harness import MeteredScript, blob_tool, compaction_host

pytestmark = pytest.mark.anyio


def test_unloading_the_plugin_leaves_the_host_as_before(tmp_path: Path) -> None:
    with host(tmp_path, ScriptedAdapter()) as ctx:
        before = ctx.describe()
        loaded = ctx.plugin(compaction.plugin)
        assert ctx.has(COMPACTION)
        loaded.unload()
        assert ctx.describe() == before


@pytest.mark.parametrize(
    ("config", "path"),
    [
        ({"threshold_ratio": 1.5}, "threshold_ratio"),
        ({"retain_ratio": 0}, "retain_ratio"),
        ({"context_windows": {"tiny": 10}}, "context_windows.tiny"),
        ({"treshold_ratio": 0.5}, "treshold_ratio"),
        ({"prune_min_tokens": 5}, "prune_min_tokens"),
    ],
)
def test_bad_config_names_the_plugin_and_the_key(
    tmp_path: Path, config: dict[str, object], path: str
) -> None:
    with host(tmp_path, ScriptedAdapter()) as ctx, pytest.raises(ConfigError) as raised:
        ctx.plugin(compaction.plugin, config)
    assert "compaction" in str(raised.value)
    assert path in str(raised.value)


def test_the_window_is_per_model_with_a_default() -> None:
    config = Config(context_window=64_000, context_windows={"big": 1_000_000})
    assert config.window("big") == 1_000_000
    assert config.window("other") == config.window(None) == 64_000


async def test_the_meter_calibrates_on_reported_usage_and_compacts_earlier(tmp_path: Path) -> None:
    steps = [
        calls(("c1", "blob", '{"size": 4000}')),
        text("done one"),
        calls(("c2", "blob", '{"size": 4000}')),
    ]
    config = Config(context_window=4096, prune=False)
    outcomes: dict[int, int] = {}
    for factor in (1, 2):
        # about 2300 tokens at turn 2 step 2: past 0.8 * 4096 only when the provider counts double
        summary = [text("the summary")] if factor == 2 else []
        adapter = MeteredScript([*steps, *summary, text("done two")], factor=factor)
        with compaction_host(tmp_path / str(factor), adapter, config, tool_list=[blob_tool()]) as ctx:
            service = ctx.get(COMPACTION)
            async with ctx.get(AGENTS).create(OPTIONS) as agent:
                await agent.run("one")
                calibration = service.calibration(agent)
                await agent.run("two")
            types = [e.type for e in ctx.get(STORE).events(agent.id)]
        assert calibration == Calibration(reported=adapter.sent[1], estimated=adapter.sent[1] // factor)
        outcomes[factor] = types.count("compaction/summary")
    assert outcomes == {1: 0, 2: 1}


async def test_a_shadowed_snapshot_is_sent_again_at_the_next_step(tmp_path: Path) -> None:
    adapter = MeteredScript(
        [
            calls(("c1", "blob", '{"size": 8000}')),
            text("done one"),
            calls(("c2", "blob", '{"size": 8000}')),
            text("the summary"),
            text("done two"),
        ]
    )
    with compaction_host(
        tmp_path, adapter, Config(context_window=4096, prune=False), tool_list=[blob_tool()]
    ) as ctx:
        ctx.get(SYSTEM_PROMPT).context(PromptContext("branch", 0, "Branch: main"))
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            await agent.run("one")
            await agent.run("two")
            messages = agent.messages()
    snapshots = [
        m
        for m in messages
        if isinstance(m, UserMessage) and isinstance(m.source, PluginSource) and m.source.form == "snapshot"
    ]
    # the checkpoint took turn 1's snapshot; the loop sent it again with the step after the compaction
    assert len(snapshots) == 1
    assert messages.index(snapshots[0]) == 3
    assert any("Branch: main" in b.text for b in snapshots[0].content if isinstance(b, TextBlock))
    assert adapter.requests[-1].messages == messages[:-1]
