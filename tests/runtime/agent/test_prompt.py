"""The prompt as the loop assembles it in real turns: zero-argument providers, a provider that fails the turn naming
its section, and the `model` and `cwd` variables as projections of the agent being assembled for (RFC
prompt-variables-and-tool-guidance-ownership; spec/prompt-and-subagents.md §1.11)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import anyio
import pytest

from dsh.runtime.agent import AGENTS, REQUEST, AgentOptions, RequestConfig, RequestInfo, assemble_context_for
from dsh.runtime.kernel import Next
from dsh.runtime.prompt import (
    ASSEMBLE,
    SYSTEM_PROMPT,
    AssembleContext,
    PromptAssembly,
    PromptProviderError,
    PromptSection,
    ProviderSignatureError,
    render_prompt,
)
from dsh.runtime.session import STORE

from .harness import MODEL, OPTIONS, PROVIDER, ScriptedAdapter, event_types, host, text

pytestmark = pytest.mark.anyio

FACTS = "You are powered by the {{model}} model, working in {{cwd}}."


async def test_a_zero_argument_section_renders_in_a_real_turn(tmp_path: Path) -> None:
    adapter = ScriptedAdapter([text("ok")])
    with host(tmp_path, adapter, persona="You are terse.") as ctx:
        ctx.get(SYSTEM_PROMPT).section(PromptSection("tool:habit", 100, lambda: "Check every result."))
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            outcome = await agent.run("go")
    assert outcome.kind == "completed"
    assert adapter.requests[0].system.endswith("You are terse.\n\nCheck every result.")


async def test_a_bad_provider_signature_is_refused_before_any_turn(tmp_path: Path) -> None:
    def two(context: AssembleContext, extra: int) -> str:
        return "never"

    with host(tmp_path, ScriptedAdapter()) as ctx:
        sp = ctx.get(SYSTEM_PROMPT)
        with pytest.raises(
            ProviderSignatureError, match=r'^prompt section "tool:two" text provider must take'
        ):
            sp.section(PromptSection("tool:two", 100, two))  # type: ignore[arg-type]  # the point
        assert "tool:two" not in [name for name, _, _ in sp.describe()[""]["sections"]]


async def test_a_raising_provider_fails_the_turn_naming_the_section(tmp_path: Path) -> None:
    def broken(context: AssembleContext) -> str:
        raise RuntimeError("sandbox state unavailable")

    adapter = ScriptedAdapter([text("never sent")])
    with host(tmp_path, adapter) as ctx:
        ctx.get(SYSTEM_PROMPT).section(PromptSection("tool:sandbox", 100, broken))
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            outcome = await agent.run("go")
        types = event_types(ctx.get(STORE), agent.id)
    assert outcome.kind == "error"
    assert isinstance(outcome.error, PromptProviderError)
    assert (outcome.error.kind, outcome.error.name) == ("section", "tool:sandbox")
    assert outcome.failure is not None
    assert 'prompt section "tool:sandbox" text provider raised RuntimeError: sandbox state unavailable' in (
        outcome.failure.message
    )
    assert adapter.requests == []
    assert types == ["agent/inbox/spliced", "turn/start", "agent/inbox/spliced", "turn/end"]


async def test_the_agent_alone_and_assemble_context_for_render_the_same_facts(tmp_path: Path) -> None:
    with host(tmp_path, ScriptedAdapter(), persona=FACTS) as ctx:
        sp = ctx.get(SYSTEM_PROMPT)
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            bare = await sp.assemble(AssembleContext(agent=agent))
            loop = await sp.assemble(assemble_context_for(agent))
    expected = f"You are powered by the {MODEL} model, working in /work/project."
    for assembly in (bare, loop):
        assert {name: assembly.variables[name] for name in ("model", "cwd")} == {
            "model": MODEL,
            "cwd": "/work/project",
        }
        assert render_prompt(assembly).endswith(expected)


async def test_with_an_agent_the_facts_are_never_read(tmp_path: Path) -> None:
    with host(tmp_path, ScriptedAdapter(), persona=FACTS) as ctx:
        sp = ctx.get(SYSTEM_PROMPT)
        stated = {"model": "some-other-model", "cwd": "/elsewhere"}
        agentless = await sp.assemble(AssembleContext(facts=stated))
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            assembly = await sp.assemble(AssembleContext(ctx=agent.ctx, agent=agent, facts=stated))
        nothing = await sp.assemble(AssembleContext())
    assert {k: agentless.variables[k] for k in stated} == stated  # the agent-less form keeps its facts
    assert {k: assembly.variables[k] for k in stated} == {"model": MODEL, "cwd": "/work/project"}
    assert {k: nothing.variables[k] for k in stated} == {"model": None, "cwd": None}


async def test_two_agents_with_different_models_in_one_context_each_name_their_own(tmp_path: Path) -> None:
    adapter = ScriptedAdapter([text("one"), text("two")])
    with host(tmp_path, adapter, persona=FACTS) as ctx:
        agents = ctx.get(AGENTS)
        sp = ctx.get(SYSTEM_PROMPT)
        first_options = AgentOptions(provider=PROVIDER, model="model-a", cwd=Path("/work/a"))
        second_options = AgentOptions(provider=PROVIDER, model="model-b", cwd=Path("/work/b"))
        async with agents.create(first_options) as first, agents.create(second_options) as second:
            rendered: dict[str, str] = {}

            async def assemble(name: str, context: AssembleContext) -> None:
                rendered[name] = render_prompt(await sp.assemble(context))

            async with anyio.create_task_group() as group:
                group.start_soon(assemble, "first", assemble_context_for(first))
                group.start_soon(assemble, "second", AssembleContext(agent=second))
            await first.run("go")
            await second.run("go")
    assert rendered["first"].endswith("powered by the model-a model, working in /work/a.")
    assert rendered["second"].endswith("powered by the model-b model, working in /work/b.")
    systems = {request.model: request.system for request in adapter.requests}
    assert systems["model-a"].endswith("powered by the model-a model, working in /work/a.")
    assert systems["model-b"].endswith("powered by the model-b model, working in /work/b.")


async def test_a_resumed_session_states_its_stored_cwd(tmp_path: Path) -> None:
    with host(tmp_path, ScriptedAdapter(), persona=FACTS) as ctx:
        agents = ctx.get(AGENTS)
        async with agents.create(OPTIONS) as agent:
            session_id = agent.id
        async with agents.resume(session_id, AgentOptions(provider=PROVIDER, model="resumed")) as resumed:
            assembly = await ctx.get(SYSTEM_PROMPT).assemble(assemble_context_for(resumed))
    assert assembly.variables["model"] == "resumed"
    assert assembly.variables["cwd"] == "/work/project"


async def test_a_plugin_that_supplies_the_model_late_states_it_on_the_assemble_waterfall(
    tmp_path: Path,
) -> None:
    # The RFC's remedy for a model supplied in agent/request (options.model unset): the same owner states it early,
    # as assembly.variables["model"]; without that statement a {{model}} persona fails before any model call.
    async def supply(config: RequestConfig, info: RequestInfo, next_: Next[RequestConfig]) -> RequestConfig:
        return await next_(dataclasses.replace(config, model="late-model"))

    async def state(
        assembly: PromptAssembly, context: AssembleContext, next_: Next[PromptAssembly]
    ) -> PromptAssembly:
        assembly.variables["model"] = "late-model"
        return await next_(assembly)

    adapter = ScriptedAdapter([text("ok")])
    with host(tmp_path, adapter, persona="Powered by {{model}}.") as ctx:
        ctx.on(REQUEST, supply)
        options = AgentOptions(provider=PROVIDER, cwd=Path("/work/project"))
        async with ctx.get(AGENTS).create(options) as agent:
            unstated = await agent.run("go")
            assert unstated.kind == "error"
            assert unstated.failure is not None
            assert 'prompt variable "{{model}}" has no value for this assembly' in unstated.failure.message
            assert adapter.requests == []
            ctx.on(ASSEMBLE, state)
            stated = await agent.run("go")
    assert stated.kind == "completed"
    assert adapter.requests[0].model == "late-model"
    assert "Powered by late-model." in adapter.requests[0].system
