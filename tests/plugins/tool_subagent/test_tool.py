"""The subagent tool: its wording follows its provider's `inherits_parent_context` (goldens of both schemas), it
exists exactly while its provider is registered and is re-worded on reload, and its refusals."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import msgspec
import pytest
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.json import JSONSnapshotExtension

from dsh.plugins import subagent, tool_subagent
from dsh.plugins.subagent import (
    PROVIDER_REMOVED,
    SUBAGENTS,
    SubagentProvider,
    SubagentRequest,
    SubagentResult,
    SubagentRun,
)
from dsh.plugins.tool_subagent import render_result, wording
from dsh.runtime import tools
from dsh.runtime.kernel import ConfigError, Context, ListenerError, Plugin
from dsh.runtime.llm import CallId, ToolCallBlock
from dsh.runtime.prompt import SYSTEM_PROMPT
from dsh.runtime.prompt import plugin as prompt_plugin
from dsh.runtime.tools import TOOLS, DuplicateToolError, ToolContext
from tests.plugins.tool_host import model_view


class Flagged(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    name: str = "spawn"
    inherits: bool = False


@asynccontextmanager
async def unused(request: SubagentRequest) -> AsyncIterator[SubagentRun]:
    raise AssertionError("not started in these tests")
    yield  # pragma: no cover


def _register(ctx: Context, config: Flagged) -> None:
    ctx.get(SUBAGENTS).register(SubagentProvider(config.name, config.inherits, unused))


# a provider whose name and flag are config: a reload with another flag must re-word the tool
test_provider = Plugin(name="test-provider", apply=_register, config=Flagged, needs=(SUBAGENTS,))


def base() -> Context:
    ctx = Context()
    ctx.plugin(tools.plugin)
    ctx.plugin(subagent.plugin)
    return ctx


def schema(ctx: Context, name: str) -> dict[str, object] | None:
    tool = ctx.get(TOOLS).get(name)
    if tool is None:
        return None
    return {"name": tool.name, "description": tool.description, "parameters": dict(tool.parameters)}


@pytest.mark.parametrize(("provider", "inherits"), [("spawn", False), ("fork", True)])
def test_the_schema_model_sees_for_each_flag(
    provider: str, inherits: bool, snapshot: SnapshotAssertion
) -> None:
    ctx = base()
    ctx.plugin(test_provider, {"name": provider, "inherits": inherits})
    ctx.plugin(tool_subagent.plugin, {"provider": provider})
    name = "subagent" if provider == "spawn" else "subagent_fork"
    assert schema(ctx, name) == snapshot(extension_class=JSONSnapshotExtension)


def test_the_wording_says_what_the_child_sees() -> None:
    spawn, fork = wording(False), wording(True)
    assert "does not see this conversation" in spawn.description
    assert "include everything it needs" in spawn.prompt
    assert "inherits this conversation" in fork.description
    assert "completed turns" in fork.description
    assert "in-flight" in fork.description
    assert "completed turns" in fork.prompt
    assert "state only what is new" in fork.prompt
    assert "does not see this conversation" not in fork.description + fork.prompt


def test_parameters_match_the_originals_tool() -> None:
    for inherits in (False, True):
        parameters = tool_subagent.parameters(inherits)
        assert sorted(parameters["properties"]) == ["description", "prompt"]
        assert parameters["required"] == ["description", "prompt"]


def test_the_tool_follows_its_provider_load_unload_and_reload(caplog: pytest.LogCaptureFixture) -> None:
    ctx = base()
    with caplog.at_level(logging.INFO, logger="dsh.tool_subagent"):
        ctx.plugin(tool_subagent.plugin, {"provider": "spawn"})
    assert (
        'subagent provider "spawn" not registered yet; the "subagent" tool will register when it appears'
        in (caplog.text)
    )
    assert schema(ctx, "subagent") is None
    provider = ctx.plugin(test_provider, {"name": "spawn", "inherits": False})
    mounted = schema(ctx, "subagent")
    assert mounted is not None
    assert mounted["description"] == wording(False).description
    provider.unload()
    assert schema(ctx, "subagent") is None
    # same name, new provider object with the other flag: the tool is re-derived from it
    provider = ctx.plugin(test_provider, {"name": "spawn", "inherits": False}).reload(
        {"name": "spawn", "inherits": True}
    )
    tool = ctx.get(TOOLS).get("subagent")
    assert tool is not None
    assert tool.description == wording(True).description
    assert tool.parameters["properties"]["prompt"]["description"] == wording(True).prompt
    # another provider's comings and goings are ignored
    ctx.plugin(test_provider, {"name": "fork", "inherits": True}, id="other").unload()
    assert ctx.get(TOOLS).get("subagent") is tool


def test_a_throwing_removed_listener_does_not_leave_a_stale_tool() -> None:
    ctx = base()

    async def broken(p: SubagentProvider) -> None:
        raise RuntimeError("listener bug")

    ctx.plugin(Plugin(name="hostile", apply=lambda c, _: (c.on(PROVIDER_REMOVED, broken), None)[1]))
    provider = ctx.plugin(test_provider)
    ctx.plugin(tool_subagent.plugin, {"provider": "spawn"})
    assert schema(ctx, "subagent") is not None
    provider.unload()
    assert schema(ctx, "subagent") is None


def test_a_tool_that_cannot_mount_rolls_the_provider_registration_back() -> None:
    ctx = base()
    ctx.plugin(tool_subagent.plugin, {"provider": "spawn"}, id="first")
    ctx.plugin(tool_subagent.plugin, {"provider": "spawn", "tool_name": "subagent"}, id="second")
    with pytest.raises(ListenerError) as refused:
        ctx.plugin(test_provider)
    assert isinstance(refused.value.error, DuplicateToolError)
    assert ctx.get(SUBAGENTS).providers() == []
    assert schema(ctx, "subagent") is None  # the first instance mounted, then unmounted on the rollback


def test_unloading_the_tool_plugin_removes_the_tool_and_its_listeners() -> None:
    ctx = base()
    ctx.plugin(test_provider)
    before = (ctx.describe(), ctx.get(TOOLS).visible())
    loaded = ctx.plugin(tool_subagent.plugin, {"provider": "spawn"})
    assert schema(ctx, "subagent") is not None
    loaded.unload()
    assert (ctx.describe(), ctx.get(TOOLS).visible()) == before


def test_tool_names_default_from_the_provider_and_a_bad_one_is_refused() -> None:
    assert tool_subagent.default_tool_name("spawn") == "subagent"
    assert tool_subagent.default_tool_name("fork") == "subagent_fork"
    assert tool_subagent.default_tool_name("acp") == "subagent_acp"
    with pytest.raises(ConfigError, match='tool name "sub agent" is invalid'):
        base().plugin(tool_subagent.plugin, {"provider": "spawn", "tool_name": "sub agent"})
    with pytest.raises(ConfigError, match="provider"):
        base().plugin(tool_subagent.plugin, {})


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("arguments", "agent", "code", "message"),
    [
        ({"description": "d", "prompt": "p"}, None, "NO_CALLING_AGENT", "requires a calling agent"),
        (
            {"description": "d", "prompt": "p", "run_in_background": True},
            object(),
            "INVALID_ARGUMENTS",
            "run_in_background is disabled for this tool instance",
        ),
        ({"description": "d", "prompt": "  "}, object(), "INVALID_ARGUMENTS", "needs a non-empty prompt"),
    ],
)
async def test_calls_it_refuses(
    arguments: dict[str, object], agent: object, code: str, message: str, tmp_path: Path
) -> None:
    ctx = base()
    ctx.plugin(test_provider)
    ctx.plugin(tool_subagent.plugin, {"provider": "spawn"})
    result = await ctx.get(TOOLS).execute(
        ToolCallBlock(CallId("c1"), "subagent", json.dumps(arguments)),
        ToolContext(ctx=ctx, cwd=tmp_path, call_id="c1", agent=agent),
    )
    assert (result.is_error, result.code) == (True, code)
    assert message in result.text


@pytest.mark.parametrize(
    ("result", "code", "text"),
    [
        (SubagentResult("completed", "the answer"), None, "the answer"),
        (SubagentResult("completed"), None, "(the subagent finished without a text answer)"),
        (SubagentResult("aborted"), "SUBAGENT_ABORTED", "Error: subagent run was cancelled"),
        (
            SubagentResult("error", "half done", diagnostic="SERVER: down"),
            "SUBAGENT_FAILED",
            "Error: subagent run failed\nDiagnostic: SERVER: down\nPartial output before the run ended:\nhalf done",
        ),
        (
            SubagentResult("max-tokens"),
            "SUBAGENT_MAX_TOKENS",
            "Error: subagent run hit its token limit before finishing",
        ),
        (SubagentResult("refusal"), "SUBAGENT_REFUSED", "Error: subagent declined the task"),
    ],
)
def test_results_as_the_parent_sees_them(result: SubagentResult, code: str | None, text: str) -> None:
    rendered = render_result(result)
    assert (rendered.code, rendered.text, rendered.is_error) == (code, text, code is not None)


def test_a_waiting_tool_plugin_unloaded_before_its_provider_arrives_never_mounts() -> None:
    ctx = base()
    ctx.plugin(tool_subagent.plugin, {"provider": "spawn"}).unload()
    ctx.plugin(test_provider)
    assert ctx.get(TOOLS).visible() == []


def test_a_continuable_tool_says_its_habits_in_a_section_while_it_exists() -> None:
    ctx = Context()
    ctx.plugin(prompt_plugin)
    ctx.plugin(tools.plugin)
    ctx.plugin(subagent.plugin)
    ctx.plugin(tool_subagent.plugin, {"provider": "spawn", "background_mode": "continuable"})
    habits = tool_subagent.continuable_section("subagent")
    assert habits.startswith("Use subagent in the background by default.")
    assert "`run_in_background: false` only when your next action depends" in habits
    system, _ = model_view(ctx)
    assert habits not in system, "empty while the tool is absent (no provider yet)"
    provider = ctx.plugin(test_provider, {"name": "spawn", "inherits": False})
    system, _ = model_view(ctx)
    assert habits in system
    assert 'tool:subagent", 116.5' in str(ctx.get(SYSTEM_PROMPT).describe()).replace("'", '"')
    provider.unload()
    assert habits not in model_view(ctx)[0]
    # a one-shot tool has no section
    one_shot = Context()
    one_shot.plugin(prompt_plugin)
    one_shot.plugin(tools.plugin)
    one_shot.plugin(subagent.plugin)
    one_shot.plugin(tool_subagent.plugin, {"provider": "spawn"})
    one_shot.plugin(test_provider, {"name": "spawn", "inherits": False})
    assert "tool:subagent" not in str(one_shot.get(SYSTEM_PROMPT).describe())
