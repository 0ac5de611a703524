"""`assemble()`: ordering, scoped layers and shadowing, complete sections, runtime contexts, tool providers and
`tool_order`, and the `system-prompt/assemble` waterfall (spec/prompt-and-subagents.md §1.3-§1.9)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
import pytest

from dsh.runtime.kernel import ConfigError, Context, ListenerError
from dsh.runtime.prompt import (
    ASSEMBLE,
    IDENTITY,
    PERSONA_SECTION,
    SYSTEM_PROMPT,
    TOOL_ORDER_REST,
    AssembleContext,
    AssembledText,
    CompleteSectionConflictError,
    PromptAssembly,
    PromptConfig,
    PromptContext,
    PromptSection,
    SystemPrompt,
    ToolOrderError,
    ToolSchema,
    ToolSet,
    plugin,
    render_context_snapshot,
    render_prompt,
)

pytestmark = pytest.mark.anyio

Listener = Callable[
    [PromptAssembly, AssembleContext, Callable[[PromptAssembly], Awaitable[PromptAssembly]]], Any
]


def names(assembly: PromptAssembly) -> list[str]:
    return [section.name for section in assembly.sections]


def tool(name: str, **parameters: Any) -> ToolSchema:
    return ToolSchema(name, f"The {name} tool.", {"type": "object", "properties": parameters})


def provider(
    *schemas: ToolSchema, known: tuple[str, ...] | None = None
) -> Callable[[AssembleContext], ToolSet]:
    def provide(context: AssembleContext) -> ToolSet:
        return ToolSet(schemas, known)

    return provide


async def test_identity_first_then_persona(sp: SystemPrompt) -> None:
    assembly = await sp.assemble()
    assert assembly.sections == [
        AssembledText("harness:identity", IDENTITY),
        AssembledText(PERSONA_SECTION, "You are a test agent."),
    ]
    assert render_prompt(assembly) == f"{IDENTITY}\n\nYou are a test agent."


async def test_an_empty_persona_is_dropped_at_render() -> None:
    ctx = Context()
    ctx.plugin(plugin, {"identity": False})
    assembly = await ctx.get(SYSTEM_PROMPT).assemble()
    assert names(assembly) == [PERSONA_SECTION]
    assert render_prompt(assembly) == ""


async def test_sections_sort_by_order_stably(sp: SystemPrompt) -> None:
    sp.section(PromptSection("tool:bash", 105, "bash"))
    sp.section(PromptSection("tool:read", 100, "read"))
    sp.section(PromptSection("early", -5, "early"))
    sp.section(PromptSection("tie:first", 100, "t1"))
    sp.section(PromptSection("tool:sub", 116.5, "sub"))
    assembly = await sp.assemble()
    assert names(assembly) == [
        "harness:identity",
        "early",
        PERSONA_SECTION,
        "tool:read",
        "tie:first",
        "tool:bash",
        "tool:sub",
    ]


async def test_callable_text_gets_the_context(sp: SystemPrompt) -> None:
    seen: list[AssembleContext] = []

    def text(context: AssembleContext) -> str:
        seen.append(context)
        return f"facts: {dict(context.facts)}"

    sp.section(PromptSection("dyn", 1, text))
    context = AssembleContext(facts={"model": "m"})
    assembly = await sp.assemble(context)
    assert assembly.sections[-1] == AssembledText("dyn", "facts: {'model': 'm'}")
    assert seen[0] is context


async def test_a_text_provider_returning_a_non_string_is_a_type_error(sp: SystemPrompt) -> None:
    sp.section(PromptSection("bad", 1, lambda context: 3))  # type: ignore[arg-type]  # the point
    with pytest.raises(TypeError, match='prompt section "bad" text provider returned int, not str'):
        await sp.assemble()


# -- variables ---------------------------------------------------------------------------------------------


async def test_variables_resolve_per_assembly_and_none_means_no_value(sp: SystemPrompt) -> None:
    sp.variable("model", lambda context: context.facts.get("model"))
    sp.variable("cwd", lambda context: context.facts.get("cwd"))
    assembly = await sp.assemble(AssembleContext(facts={"model": "deepseek-v4-flash"}))
    assert assembly.variables == {"model": "deepseek-v4-flash", "cwd": None}
    assert list(assembly.variables) == ["model", "cwd"]


async def test_every_provider_runs_on_every_assembly_of_unchanged_registries(sp: SystemPrompt) -> None:
    # The merge of the registries is reused while nothing is registered or disposed; providers never are.
    sp.variable("model", lambda context: context.facts.get("model"))
    sp.section(PromptSection("dyn", 1, lambda context: f"text {context.facts.get('model')}"))
    sp.context(PromptContext("ctx", 1, lambda context: f"context {context.facts.get('model')}"))
    sp.tools(lambda context: ToolSet((tool(context.facts.get("model", "none")),)))
    for model in ("a", "b", "a"):
        assembly = await sp.assemble(AssembleContext(facts={"model": model}))
        assert assembly.variables == {"model": model}
        assert assembly.sections[-1] == AssembledText("dyn", f"text {model}")
        assert assembly.contexts == [AssembledText("ctx", f"context {model}")]
        assert [t.name for t in assembly.tools] == [model]


async def test_a_variable_provider_returning_a_non_string_is_a_type_error(sp: SystemPrompt) -> None:
    sp.variable("n", lambda context: 1)  # type: ignore[arg-type]  # the wrong type is the point
    with pytest.raises(TypeError, match='prompt variable "n" provider returned int'):
        await sp.assemble()


async def test_a_scoped_variable_shadows_and_the_shadowed_provider_is_never_called(ctx: Context) -> None:
    calls: list[str] = []

    def global_model(context: AssembleContext) -> str:
        calls.append("global")
        return "global-model"

    ctx.get(SYSTEM_PROMPT).variable("model", global_model)
    ctx.get(SYSTEM_PROMPT).variable("cwd", lambda context: "/g")
    agent = ctx.scoped("agent")
    agent.get(SYSTEM_PROMPT).variable("model", lambda context: "agent-model")
    scoped = await ctx.get(SYSTEM_PROMPT).assemble(AssembleContext(ctx=agent))
    assert scoped.variables == {"model": "agent-model", "cwd": "/g"}
    assert list(scoped.variables) == ["model", "cwd"]  # the shadowing entry keeps the global position
    assert calls == []
    assert (await ctx.get(SYSTEM_PROMPT).assemble()).variables["model"] == "global-model"


# -- scopes ------------------------------------------------------------------------------------------------


async def test_a_scoped_persona_shadows_the_deployment_persona_for_that_scope_only(ctx: Context) -> None:
    sp = ctx.get(SYSTEM_PROMPT)
    agent = ctx.scoped("agent-1")
    agent.get(SYSTEM_PROMPT).section(PromptSection(PERSONA_SECTION, 0, "You are the reviewer."))
    child = agent.scoped("child")
    sibling = ctx.scoped("agent-2")

    def persona(assembly: PromptAssembly) -> str:
        return next(s.text for s in assembly.sections if s.name == PERSONA_SECTION)

    assert persona(await sp.assemble(AssembleContext(ctx=agent))) == "You are the reviewer."
    assert persona(await sp.assemble(AssembleContext(ctx=child))) == "You are the reviewer."
    assert persona(await sp.assemble(AssembleContext(ctx=sibling))) == "You are a test agent."
    assert persona(await sp.assemble()) == "You are a test agent."


async def test_an_empty_scoped_persona_shadows_the_persona_away(ctx: Context) -> None:
    agent = ctx.scoped("agent")
    agent.get(SYSTEM_PROMPT).section(PromptSection(PERSONA_SECTION, 0, ""))
    assert render_prompt(await ctx.get(SYSTEM_PROMPT).assemble(AssembleContext(ctx=agent))) == IDENTITY


async def test_shadowed_section_providers_are_never_called(ctx: Context) -> None:
    calls: list[str] = []

    def global_text(context: AssembleContext) -> str:
        calls.append("global")
        return "global"

    ctx.get(SYSTEM_PROMPT).section(PromptSection("guide", 100, global_text))
    agent = ctx.scoped("agent")
    agent.get(SYSTEM_PROMPT).section(PromptSection("guide", 100, lambda context: "scoped"))
    assembly = await ctx.get(SYSTEM_PROMPT).assemble(AssembleContext(ctx=agent))
    assert assembly.sections[-1] == AssembledText("guide", "scoped")
    assert calls == []


async def test_a_shadowing_section_keeps_the_global_position_on_ties(ctx: Context) -> None:
    sp = ctx.get(SYSTEM_PROMPT)
    sp.section(PromptSection("a", 50, "A"))
    sp.section(PromptSection("b", 50, "B"))
    agent = ctx.scoped("agent")
    agent.get(SYSTEM_PROMPT).section(PromptSection("a", 50, "scoped A"))
    assembly = await sp.assemble(AssembleContext(ctx=agent))
    assert [(s.name, s.text) for s in assembly.sections[2:]] == [("a", "scoped A"), ("b", "B")]


async def test_a_scoped_section_may_take_another_order(ctx: Context) -> None:
    agent = ctx.scoped("agent")
    agent.get(SYSTEM_PROMPT).section(PromptSection(PERSONA_SECTION, -200, "first"))
    assembly = await ctx.get(SYSTEM_PROMPT).assemble(AssembleContext(ctx=agent))
    assert names(assembly) == [PERSONA_SECTION, "harness:identity"]


# -- complete sections -------------------------------------------------------------------------------------


async def test_a_complete_section_is_the_whole_prompt_after_the_waterfall(
    ctx: Context, sp: SystemPrompt
) -> None:
    sp.variable("model", lambda context: "m")
    sp.tools(provider(tool("bash")))
    sp.section(PromptSection("only", 5, "Only this, on {{model}}.", complete=True))

    async def edit(assembly: PromptAssembly, context: AssembleContext, next: Any) -> PromptAssembly:
        assert names(assembly) == ["harness:identity", PERSONA_SECTION, "only"]  # listeners see them all
        assembly.sections = [AssembledText("only", "edited"), AssembledText("added", "by a listener")]
        assembly.variables["extra"] = "x"
        return await next(assembly)  # type: ignore[no-any-return]  # next is the kernel's Next

    ctx.on(ASSEMBLE, edit)
    assembly = await sp.assemble()
    assert assembly.sections == [AssembledText("only", "Only this, on {{model}}.")]
    assert [t.name for t in assembly.tools] == ["bash"]
    assert assembly.variables == {"model": "m", "extra": "x"}
    assert render_prompt(assembly) == "Only this, on m."


async def test_two_complete_sections_raise_before_any_text_is_evaluated(sp: SystemPrompt) -> None:
    calls: list[str] = []

    def text(context: AssembleContext) -> str:
        calls.append("called")
        return "x"

    sp.section(PromptSection("b", 2, text, complete=True))
    sp.section(PromptSection('a"q', 1, text, complete=True))
    with pytest.raises(CompleteSectionConflictError) as caught:
        await sp.assemble()
    assert str(caught.value) == 'multiple complete prompt sections are active: "a\\"q", "b"'
    assert caught.value.names == ('a"q', "b")
    assert calls == []


async def test_the_complete_section_conflict_raises_on_every_assembly(sp: SystemPrompt) -> None:
    sp.section(PromptSection("a", 1, "a", complete=True))
    dispose = sp.section(PromptSection("b", 2, "b", complete=True))
    for _ in range(2):
        with pytest.raises(CompleteSectionConflictError):
            await sp.assemble()
    dispose()
    assert names(await sp.assemble()) == ["a"]


async def test_a_scoped_section_without_the_flag_cancels_completeness_for_its_scope(ctx: Context) -> None:
    sp = ctx.get(SYSTEM_PROMPT)
    sp.section(PromptSection("full", 5, "everything", complete=True))
    agent = ctx.scoped("agent")
    agent.get(SYSTEM_PROMPT).section(PromptSection("full", 5, "partial"))
    assert names(await sp.assemble()) == ["full"]
    assert names(await sp.assemble(AssembleContext(ctx=agent))) == [
        "harness:identity",
        PERSONA_SECTION,
        "full",
    ]


# -- runtime contexts --------------------------------------------------------------------------------------


async def test_contexts_sort_by_order_and_keep_empty_text(sp: SystemPrompt) -> None:
    sp.context(PromptContext("delegation", 120, "delegated"))
    sp.context(PromptContext("sandbox", 110, lambda context: "sandboxed"))
    sp.context(PromptContext("empty", 115, ""))
    assembly = await sp.assemble()
    assert [(c.name, c.text) for c in assembly.contexts] == [
        ("sandbox", "sandboxed"),
        ("empty", ""),
        ("delegation", "delegated"),
    ]
    assert render_context_snapshot(assembly).endswith("\n\nsandboxed\n\ndelegated")
    assert "sandboxed" not in render_prompt(assembly)


async def test_suppression_calls_no_context_provider_and_drops_listener_contexts(
    ctx: Context, sp: SystemPrompt
) -> None:
    calls: list[str] = []

    def text(context: AssembleContext) -> str:
        calls.append("called")
        return "x"

    sp.context(PromptContext("sandbox", 110, text))
    suppressors = [sp.suppress_runtime_context(), sp.suppress_runtime_context()]

    async def add(assembly: PromptAssembly, context: AssembleContext, next: Any) -> PromptAssembly:
        assembly.contexts.append(AssembledText("late", "added"))
        return await next(assembly)  # type: ignore[no-any-return]  # next is the kernel's Next

    ctx.on(ASSEMBLE, add)
    assert (await sp.assemble()).contexts == []
    assert calls == []
    suppressors[0]()
    assert (await sp.assemble()).contexts == []  # counted: one suppressor is still there
    suppressors[1]()
    assert [c.name for c in (await sp.assemble()).contexts] == ["sandbox", "late"]


async def test_a_scoped_suppressor_suppresses_only_its_scope(ctx: Context, sp: SystemPrompt) -> None:
    sp.context(PromptContext("sandbox", 110, "x"))
    agent = ctx.scoped("agent")
    agent.get(SYSTEM_PROMPT).suppress_runtime_context()
    assert (await sp.assemble(AssembleContext(ctx=agent.scoped("child")))).contexts == []
    assert [c.name for c in (await sp.assemble()).contexts] == ["sandbox"]


# -- tools -------------------------------------------------------------------------------------------------


async def test_tools_from_every_layer_sorted_by_code_point(ctx: Context, sp: SystemPrompt) -> None:
    sp.tools(provider(tool("web_fetch"), tool("Zeta"), tool("bash")))
    agent = ctx.scoped("agent")
    agent.get(SYSTEM_PROMPT).tools(provider(tool("agent_only"), tool("read")))
    assert [t.name for t in (await sp.assemble()).tools] == ["Zeta", "bash", "web_fetch"]
    scoped = await sp.assemble(AssembleContext(ctx=agent))
    assert [t.name for t in scoped.tools] == ["Zeta", "agent_only", "bash", "read", "web_fetch"]


async def test_a_provider_registered_during_assembly_waits_for_the_next_one(sp: SystemPrompt) -> None:
    def registers(context: AssembleContext) -> ToolSet:
        sp.tools(provider(tool("late")))
        return ToolSet((tool("first"),))

    dispose = sp.tools(registers)
    assert [t.name for t in (await sp.assemble()).tools] == ["first"]
    dispose()
    assert [t.name for t in (await sp.assemble()).tools] == ["late"]


async def test_a_tool_provider_must_return_a_tool_set(sp: SystemPrompt) -> None:
    sp.tools(lambda context: [tool("bash")])  # type: ignore[arg-type]  # the wrong type is the point
    with pytest.raises(TypeError, match=r"a tool provider \(.*\) returned list, not ToolSet"):
        await sp.assemble()


def ordered_service(tool_order: list[str]) -> SystemPrompt:
    ctx = Context()
    ctx.plugin(plugin, {"tool_order": tool_order})
    return ctx.get(SYSTEM_PROMPT)


async def test_tool_order_places_listed_tools_and_the_rest_in_name_order() -> None:
    sp = ordered_service(["todo_write", TOOL_ORDER_REST, "bash"])
    sp.tools(provider(tool("read"), tool("bash"), tool("grep"), tool("todo_write")))
    assert [t.name for t in (await sp.assemble()).tools] == ["todo_write", "grep", "read", "bash"]


async def test_a_listed_tool_known_but_hidden_here_is_simply_absent() -> None:
    sp = ordered_service(["bash", TOOL_ORDER_REST])
    sp.tools(provider(tool("read"), known=("bash", "read")))
    assert [t.name for t in (await sp.assemble()).tools] == ["read"]


@pytest.mark.parametrize(
    ("tool_order", "message"),
    [
        (["bash", "bash", TOOL_ORDER_REST], 'tool_order lists "bash" more than once'),
        (
            ["bash"],
            'tool_order must contain the "<unlisted-tools>" rest entry (where unlisted tools are inserted)',
        ),
        ([], 'tool_order must contain the "<unlisted-tools>" rest entry (where unlisted tools are inserted)'),
    ],
)
def test_tool_order_is_checked_at_load(tool_order: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        Context().plugin(plugin, {"tool_order": tool_order})
    assert caught.value.plugin == "system-prompt"
    assert message in str(caught.value)
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        PromptConfig(tool_order=tuple(tool_order))


async def test_tool_order_listing_an_unregistered_tool() -> None:
    sp = ordered_service(["ghost", TOOL_ORDER_REST])
    with pytest.raises(ToolOrderError) as caught:
        await sp.assemble()
    assert str(caught.value) == 'tool_order lists unregistered tool "ghost"; known tools: (none)'
    assert caught.value.unknown == ("ghost",)


async def test_tool_order_listing_several_unregistered_tools() -> None:
    sp = ordered_service(["ghost", TOOL_ORDER_REST, "wraith"])
    sp.tools(provider(tool("todo_write"), tool("bash")))
    with pytest.raises(ToolOrderError) as caught:
        await sp.assemble()
    assert str(caught.value) == (
        'tool_order lists unregistered tools "ghost", "wraith"; known tools: bash, todo_write'
    )


@pytest.mark.parametrize("as_schema", [False, True])
@pytest.mark.parametrize("tool_order", [None, ["bash", TOOL_ORDER_REST]])
async def test_a_provider_may_not_use_the_rest_marker(tool_order: list[str] | None, as_schema: bool) -> None:
    ctx = Context()
    ctx.plugin(plugin, {"tool_order": tool_order})
    if as_schema:  # among names that sort before and after it
        ctx.get(SYSTEM_PROMPT).tools(provider(tool("bash"), tool(TOOL_ORDER_REST), tool("1st"), tool("Zeta")))
    else:
        ctx.get(SYSTEM_PROMPT).tools(provider(tool("bash"), known=("bash", TOOL_ORDER_REST)))
    with pytest.raises(ToolOrderError) as caught:
        await ctx.get(SYSTEM_PROMPT).assemble()
    assert str(caught.value) == (
        'tool provider returned reserved tool name "<unlisted-tools>" (reserved for tool_order\'s rest entry)'
    )


async def test_same_name_tools_from_two_providers_are_not_rejected_at_assembly(sp: SystemPrompt) -> None:
    sp.tools(provider(tool("bash")))
    sp.tools(provider(tool("bash")))
    assert [t.name for t in (await sp.assemble()).tools] == ["bash", "bash"]


# -- the assemble waterfall --------------------------------------------------------------------------------


async def test_a_listener_gets_the_callers_context_object(ctx: Context, sp: SystemPrompt) -> None:
    seen: list[AssembleContext] = []

    async def look(assembly: PromptAssembly, context: AssembleContext, next: Any) -> PromptAssembly:
        seen.append(context)
        return await next(assembly)  # type: ignore[no-any-return]  # next is the kernel's Next

    ctx.on(ASSEMBLE, look)
    context = AssembleContext(facts={"model": "m"})
    await sp.assemble(context)
    assert seen[0] is context


async def test_a_listener_states_a_late_bound_model(ctx: Context, sp: SystemPrompt) -> None:
    sp.variable("model", lambda context: None)  # the loop's variable: no model in the options
    sp.section(PromptSection("who", 1, "powered by the {{model}} model"))

    async def supplies_model(assembly: PromptAssembly, context: AssembleContext, next: Any) -> PromptAssembly:
        assembly.variables["model"] = "deepseek-v4-pro"
        return await next(assembly)  # type: ignore[no-any-return]  # next is the kernel's Next

    ctx.on(ASSEMBLE, supplies_model)
    assert render_prompt(await sp.assemble()).endswith("powered by the deepseek-v4-pro model")


async def test_a_listener_may_short_circuit(ctx: Context, sp: SystemPrompt) -> None:
    calls: list[str] = []

    async def owns(assembly: PromptAssembly, context: AssembleContext, next: Any) -> PromptAssembly:
        return PromptAssembly()

    async def later(assembly: PromptAssembly, context: AssembleContext, next: Any) -> PromptAssembly:
        calls.append("later")
        return await next(assembly)  # type: ignore[no-any-return]  # next is the kernel's Next

    ctx.on(ASSEMBLE, owns)
    ctx.on(ASSEMBLE, later)
    assembly = await sp.assemble()
    assert assembly == PromptAssembly()
    assert render_prompt(assembly) == ""
    assert calls == []


async def test_a_listener_may_post_process_what_next_returns(ctx: Context, sp: SystemPrompt) -> None:
    async def outer(assembly: PromptAssembly, context: AssembleContext, next: Any) -> PromptAssembly:
        result: PromptAssembly = await next(assembly)
        result.sections = [s for s in result.sections if s.name != "harness:identity"]
        return result

    async def inner(assembly: PromptAssembly, context: AssembleContext, next: Any) -> PromptAssembly:
        assembly.sections.append(AssembledText("appended", "not re-sorted"))
        return await next(assembly)  # type: ignore[no-any-return]  # next is the kernel's Next

    ctx.on(ASSEMBLE, outer)
    ctx.on(ASSEMBLE, inner)
    sp.section(PromptSection("late", 500, "late"))
    assert names(await sp.assemble()) == [PERSONA_SECTION, "late", "appended"]


async def test_scoped_listeners_run_only_for_their_scope(ctx: Context, sp: SystemPrompt) -> None:
    heard: list[str] = []

    def listener(label: str) -> Listener:
        async def listen(assembly: PromptAssembly, context: AssembleContext, next: Any) -> PromptAssembly:
            heard.append(label)
            return await next(assembly)  # type: ignore[no-any-return]  # next is the kernel's Next

        return listen

    agent = ctx.scoped("agent")
    other = ctx.scoped("other")
    ctx.on(ASSEMBLE, listener("global"))
    agent.on(ASSEMBLE, listener("agent"))
    other.on(ASSEMBLE, listener("other"))
    await sp.assemble()
    assert heard == ["global"]
    heard.clear()
    await sp.assemble(AssembleContext(ctx=agent.scoped("child")))
    assert heard == ["global", "agent"]


async def test_a_listener_failure_propagates(ctx: Context, sp: SystemPrompt) -> None:
    async def broken(assembly: PromptAssembly, context: AssembleContext, next: Any) -> PromptAssembly:
        raise RuntimeError("listener broke")

    ctx.on(ASSEMBLE, broken)
    with pytest.raises(ListenerError, match="listener broke"):
        await sp.assemble()


async def test_a_listener_must_return_an_assembly(ctx: Context, sp: SystemPrompt) -> None:
    async def wrong(assembly: PromptAssembly, context: AssembleContext, next: Any) -> object:
        return msgspec.to_builtins(assembly)

    ctx.on(ASSEMBLE, wrong)
    with pytest.raises(
        TypeError, match=r'the "system-prompt/assemble" waterfall returned dict, not PromptAssembly'
    ):
        await sp.assemble()


async def test_each_assembly_is_fresh(sp: SystemPrompt) -> None:
    first = await sp.assemble()
    first.sections.clear()
    first.variables["x"] = "y"
    second = await sp.assemble()
    assert names(second) == ["harness:identity", PERSONA_SECTION]
    assert second.variables == {}


async def test_replacing_a_section_of_one_assembly_leaves_the_next_unchanged(
    ctx: Context, sp: SystemPrompt
) -> None:
    async def edit(assembly: PromptAssembly, context: AssembleContext, next: Any) -> PromptAssembly:
        assembly.sections[0] = AssembledText(assembly.sections[0].name, "edited")
        with pytest.raises(AttributeError):
            assembly.sections[1].text = "edited"  # type: ignore[misc]  # sections are frozen: edits replace them
        return await next(assembly)  # type: ignore[no-any-return]  # next is the kernel's Next

    dispose = ctx.on(ASSEMBLE, edit)
    assert (await sp.assemble()).sections[0].text == "edited"
    dispose()
    assert (await sp.assemble()).sections[0].text == IDENTITY
