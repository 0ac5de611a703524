"""Properties of assembly: it does not depend on the order in which independent plugins registered, and it is pure
(the same registries and context give an equal assembly, call after call)."""

from __future__ import annotations

from collections.abc import Callable

import anyio
from hypothesis import given
from hypothesis import strategies as st

from dsh.runtime.kernel import Context, NoConfig, Plugin
from dsh.runtime.prompt import (
    SYSTEM_PROMPT,
    AssembleContext,
    PromptAssembly,
    PromptContext,
    PromptSection,
    ToolSchema,
    ToolSet,
    plugin,
    render_context_snapshot,
    render_prompt,
)
from tests.strategies import PromptContribution, prompt_contributions


def constant(value: str | None) -> Callable[[AssembleContext], str | None]:
    return lambda context: value


def constant_text(value: str) -> Callable[[AssembleContext], str]:
    return lambda context: value


def as_plugin(index: int, contribution: PromptContribution) -> Plugin[NoConfig]:
    def apply(ctx: Context, config: NoConfig) -> None:
        sp = ctx.get(SYSTEM_PROMPT)
        for name, order, text in contribution.sections:
            sp.section(PromptSection(name, order, text))
        for name, order, text in contribution.contexts:
            sp.context(PromptContext(name, order, constant_text(text)))
        for name, value in contribution.variables:
            sp.variable(name, constant(value))
        schemas = tuple(ToolSchema(name, f"{name} tool", {"type": "object"}) for name in contribution.tools)
        sp.tools(lambda context: ToolSet(schemas))

    return Plugin(name=f"contribution-{index}", apply=apply)


def assemble_with(
    contributions: list[PromptContribution], order: list[int]
) -> tuple[PromptAssembly, str, str]:
    ctx = Context()
    ctx.plugin(plugin, {"persona": "persona"})
    for index in order:
        ctx.plugin(as_plugin(index, contributions[index]))
    assembly = anyio.run(ctx.get(SYSTEM_PROMPT).assemble, AssembleContext())
    # Every variable renders here: a valueless one is never referenced.
    return assembly, render_prompt(assembly), render_context_snapshot(assembly)


@given(data=st.data(), plugins=prompt_contributions())
def test_assembly_does_not_depend_on_the_registration_order_of_independent_plugins(
    data: st.DataObject, plugins: list[PromptContribution]
) -> None:
    indices = list(range(len(plugins)))
    shuffled = data.draw(st.permutations(indices))
    first = assemble_with(plugins, indices)
    second = assemble_with(plugins, list(shuffled))
    assert first == second


@given(plugins=prompt_contributions(), facts=st.dictionaries(st.sampled_from(["model", "cwd"]), st.text()))
def test_assemble_is_pure(plugins: list[PromptContribution], facts: dict[str, str]) -> None:
    ctx = Context()
    ctx.plugin(plugin, {"persona": "on {{model}}"})
    for index, contribution in enumerate(plugins):
        ctx.plugin(as_plugin(index, contribution))
    sp = ctx.get(SYSTEM_PROMPT)
    sp.variable("model", lambda context: context.facts.get("model"))
    agent = ctx.scoped("agent")
    agent.get(SYSTEM_PROMPT).section(PromptSection("agent:only", 7, "agent"))
    for context in (AssembleContext(facts=facts), AssembleContext(ctx=agent, facts=facts)):
        results = [anyio.run(sp.assemble, context) for _ in range(3)]
        assert results[0] == results[1] == results[2]
        assert results[0] is not results[1]
