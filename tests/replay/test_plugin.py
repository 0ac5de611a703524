"""The `replay` plugin: registers the adapter under the recording's provider ids (or the configured ones), provides
it as `REPLAY`, refuses bad config, and unloads cleanly."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import aclosing
from pathlib import Path

import pytest

from dsh.replay import REPLAY, ReplayAdapter, ScriptError
from dsh.replay import plugin as replay_plugin
from dsh.runtime.kernel import ConfigError, Context
from dsh.runtime.llm import LLM, CallKey, Finish, FinishStop, LlmRequest
from dsh.runtime.llm import plugin as llm_plugin
from dsh.runtime.session import STORE, SessionStore

from .logs import HARNESS, PROVIDER, LogBuilder, text_call


@pytest.fixture
def ctx(tmp_path: Path) -> Iterator[Context]:
    with SessionStore(tmp_path / "live.db") as store:
        context = Context()
        context.provide(STORE, store)
        context.plugin(llm_plugin)
        yield context


def test_it_serves_under_the_provider_ids_the_recording_names_and_unloads(ctx: Context) -> None:
    loaded = ctx.plugin(replay_plugin, {"log": str(HARNESS / "text-turn")})
    llm = ctx.get(LLM)
    assert llm.providers() == (PROVIDER,)
    adapter = ctx.get(REPLAY)
    assert isinstance(adapter, ReplayAdapter)
    assert llm.adapter(PROVIDER) is adapter
    loaded.unload()
    assert llm.providers() == ()


def test_configured_providers_replace_the_recorded_ones(ctx: Context) -> None:
    ctx.plugin(replay_plugin, {"log": str(HARNESS / "text-turn"), "providers": ["a", "b"], "pace_ms": 1})
    assert ctx.get(LLM).providers() == ("a", "b")


def test_a_recording_that_names_no_provider_serves_as_replay(ctx: Context, tmp_path: Path) -> None:
    log = LogBuilder().add("turn/start", {"turn": 1}).step(1, 1, text_call("hi"))
    ctx.plugin(replay_plugin, {"log": str(log.write(tmp_path / "s.jsonl"))})
    assert ctx.get(LLM).providers() == ("replay",)


def test_every_provider_of_every_log_is_served(ctx: Context, tmp_path: Path) -> None:
    LogBuilder("root").turn(1, [text_call("r")], provider="p1").write(tmp_path / "session.jsonl")
    LogBuilder("kid", parent="root").turn(1, [text_call("k")], provider="p2").write(
        tmp_path / "session.1.jsonl"
    )
    ctx.plugin(replay_plugin, {"log": str(tmp_path)})
    assert ctx.get(LLM).providers() == ("p1", "p2")


@pytest.mark.anyio
async def test_a_call_through_the_llm_service_is_served(ctx: Context) -> None:
    ctx.plugin(replay_plugin, {"log": str(HARNESS / "error-finish")})
    store = ctx.get(STORE)
    live = store.create()
    request = LlmRequest(
        provider=PROVIDER, model="m", messages=(), session_id=live.id, call=CallKey(turn=1, step=1)
    )
    async with aclosing(ctx.get(LLM).stream(request)) as chunks:
        got = [chunk async for chunk in chunks]
    assert len(got) == 1
    assert isinstance(got[0], Finish)
    assert got[0].reason != FinishStop()
    ctx.get(REPLAY).assert_consumed()


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({}, "Object missing required field `log`"),
        ({"log": ""}, "log must name"),
        ({"log": "x", "pace_ms": -1}, "pace_ms must be >= 0"),
        ({"log": "x", "providers": ["a", "a"]}, "lists an id twice"),
        ({"log": "x", "providers": [""]}, "non-empty"),
        ({"log": "x", "speed": 2}, "unknown key `speed`; valid keys: log,"),
    ],
)
def test_bad_config_is_refused_naming_the_plugin(ctx: Context, config: object, message: str) -> None:
    with pytest.raises(ConfigError, match='plugin "replay"') as caught:
        ctx.plugin(replay_plugin, config)
    assert message in str(caught.value)


def test_a_log_that_needs_an_override_fails_the_load_and_registers_nothing(ctx: Context) -> None:
    with pytest.raises(ScriptError, match="needs an override"):
        ctx.plugin(replay_plugin, {"log": str(HARNESS / "cancel" / "session.jsonl")})
    assert ctx.get(LLM).providers() == ()


def test_it_needs_the_llm_service_and_the_store() -> None:
    with pytest.raises(Exception, match="needs service"):
        Context().plugin(replay_plugin, {"log": str(HARNESS / "text-turn")})
