"""Registration rules of the SystemPrompt service: validation, duplicates per layer, atomicity, change events and
disposal (spec/prompt-and-subagents.md §1.2, §1.3)."""

from __future__ import annotations

import math
from collections.abc import Callable

import anyio
import anyio.lowlevel
import pytest

from dsh.runtime.kernel import Context, ListenerFailure, Plugin
from dsh.runtime.prompt import (
    CHANGE,
    PERSONA_SECTION,
    SYSTEM_PROMPT,
    AssembleContext,
    DuplicatePromptNameError,
    InvalidVariableNameError,
    NonFiniteOrderError,
    PromptChange,
    PromptContext,
    PromptError,
    PromptSection,
    SystemPrompt,
    ToolSchema,
    ToolSet,
    plugin,
)

GLOBAL_HINT = " (for a per-agent override, register through that agent's scoped context instead)"


def no_tools(context: AssembleContext) -> ToolSet:
    return ToolSet()


def test_the_service_registers_identity_and_persona(sp: SystemPrompt) -> None:
    assert sp.describe() == {
        "": {
            "sections": [("harness:identity", -100, False), ("deployment:persona", 0, False)],
            "contexts": [],
            "variables": [],
            "tools": 0,
            "suppressors": 0,
        }
    }


def test_identity_can_be_switched_off() -> None:
    ctx = Context()
    ctx.plugin(plugin, {"identity": False})
    assert ctx.get(SYSTEM_PROMPT).describe()[""]["sections"] == [("deployment:persona", 0, False)]


def test_duplicate_section_in_the_global_layer(sp: SystemPrompt) -> None:
    sp.section(PromptSection("tool:bash", 105, "a"))
    with pytest.raises(DuplicatePromptNameError) as caught:
        sp.section(PromptSection("tool:bash", 105, "b"))
    assert str(caught.value) == 'prompt section "tool:bash" is already registered' + GLOBAL_HINT
    assert (caught.value.kind, caught.value.name) == ("section", "tool:bash")
    assert isinstance(caught.value, ValueError)


def test_the_persona_name_is_reserved_even_when_empty() -> None:
    ctx = Context()
    ctx.plugin(plugin)
    with pytest.raises(
        DuplicatePromptNameError, match=r'^prompt section "deployment:persona" is already registered'
    ):
        ctx.get(SYSTEM_PROMPT).section(PromptSection(PERSONA_SECTION, 0, "mine"))


def test_duplicates_in_a_scoped_layer(ctx: Context) -> None:
    scoped = ctx.scoped("agent-1").get(SYSTEM_PROMPT)
    scoped.section(PromptSection(PERSONA_SECTION, 0, "scoped persona"))  # shadows, does not clash with global
    scoped.context(PromptContext("sandbox", 110, "x"))
    scoped.variable("model", lambda context: "m")
    with pytest.raises(DuplicatePromptNameError) as caught:
        scoped.section(PromptSection(PERSONA_SECTION, 0, "again"))
    assert str(caught.value) == 'prompt section "deployment:persona" is already registered in this scope'
    with pytest.raises(
        DuplicatePromptNameError, match=r'^prompt context "sandbox" is already registered in this scope$'
    ):
        scoped.context(PromptContext("sandbox", 1, "y"))
    with pytest.raises(
        DuplicatePromptNameError, match=r'^prompt variable "model" is already registered in this scope$'
    ):
        scoped.variable("model", lambda context: "n")


def test_the_same_name_in_two_sibling_scopes_is_fine(ctx: Context) -> None:
    ctx.scoped("a").get(SYSTEM_PROMPT).section(PromptSection("x", 1, "a"))
    ctx.scoped("b").get(SYSTEM_PROMPT).section(PromptSection("x", 1, "b"))


def test_duplicate_context_and_variable_in_the_global_layer(sp: SystemPrompt) -> None:
    sp.context(PromptContext("sandbox", 110, "x"))
    with pytest.raises(DuplicatePromptNameError) as caught:
        sp.context(PromptContext("sandbox", 110, "y"))
    assert str(caught.value) == 'prompt context "sandbox" is already registered' + GLOBAL_HINT
    sp.variable("model", lambda context: "m")
    with pytest.raises(DuplicatePromptNameError) as caught:
        sp.variable("model", lambda context: "n")
    assert str(caught.value) == 'prompt variable "model" is already registered' + GLOBAL_HINT


@pytest.mark.parametrize("name", ["", "Model", "1a", "_a", "a-b", "a.b", " a", "a ", "é", "a\n"])
def test_invalid_variable_names(sp: SystemPrompt, name: str) -> None:
    with pytest.raises(InvalidVariableNameError) as caught:
        sp.variable(name, lambda context: "v")
    assert str(caught.value) == f'invalid prompt variable name "{name}" (must match /^[a-z][a-z0-9_]*$/)'


def test_the_name_check_runs_before_the_duplicate_check(sp: SystemPrompt) -> None:
    sp.variable("a", lambda context: "v")
    with pytest.raises(InvalidVariableNameError):
        sp.variable("A", lambda context: "v")


@pytest.mark.parametrize("order", [math.nan, math.inf, -math.inf])
def test_non_finite_orders(sp: SystemPrompt, order: float) -> None:
    with pytest.raises(NonFiniteOrderError) as caught:
        sp.section(PromptSection("tool:x", order, "x"))
    assert str(caught.value) == 'prompt section "tool:x" order must be a finite number'
    assert isinstance(caught.value, TypeError)
    with pytest.raises(NonFiniteOrderError, match=r'^prompt context "c" order must be a finite number$'):
        sp.context(PromptContext("c", order, "x"))


def test_the_order_check_runs_before_the_duplicate_check(sp: SystemPrompt) -> None:
    with pytest.raises(NonFiniteOrderError):
        sp.section(PromptSection(PERSONA_SECTION, math.nan, "x"))


def test_a_failed_registration_leaves_nothing_and_announces_nothing(ctx: Context, sp: SystemPrompt) -> None:
    heard: list[PromptChange] = []

    async def listen(change: PromptChange) -> None:
        heard.append(change)

    ctx.on(CHANGE, listen)
    before = sp.describe()
    scoped = ctx.scoped("agent").get(SYSTEM_PROMPT)
    attempts: list[Callable[[], object]] = [
        lambda: sp.section(PromptSection(PERSONA_SECTION, 0, "dup")),
        lambda: sp.section(PromptSection("x", math.nan, "nan")),
        lambda: sp.section(PromptSection("x", 1, 42)),  # type: ignore[arg-type]  # a wrong text type is the point
        lambda: scoped.variable("Bad", lambda context: "v"),
        lambda: scoped.context(PromptContext("c", math.inf, "x")),
    ]
    for attempt in attempts:
        with pytest.raises((PromptError, TypeError)):
            attempt()
    assert sp.describe() == before
    assert heard == []


def test_change_fires_once_on_registration_and_once_on_disposal(ctx: Context, sp: SystemPrompt) -> None:
    heard: list[PromptChange] = []

    async def listen(change: PromptChange) -> None:
        heard.append(change)

    ctx.on(CHANGE, listen)
    disposers = [
        sp.section(PromptSection("s", 1, "x")),
        sp.context(PromptContext("c", 1, "x")),
        sp.variable("v", lambda context: None),
        sp.tools(no_tools),
        sp.suppress_runtime_context(),
    ]
    for dispose in reversed(disposers):
        dispose()
        dispose()  # idempotent: no second event
    kinds = [(change.kind, change.name, change.registered) for change in heard]
    assert kinds == [
        ("section", "s", True),
        ("context", "c", True),
        ("variable", "v", True),
        ("tools", None, True),
        ("suppress-runtime-context", None, True),
        ("suppress-runtime-context", None, False),
        ("tools", None, False),
        ("variable", "v", False),
        ("context", "c", False),
        ("section", "s", False),
    ]
    assert all(change.scope is None for change in heard)


def test_scoped_change_listeners_hear_only_their_scope(ctx: Context) -> None:
    agent = ctx.scoped("agent")
    other = ctx.scoped("other")
    heard: list[tuple[str, str | None]] = []

    async def listen(change: PromptChange) -> None:
        heard.append(("agent-listener", change.name))

    agent.on(CHANGE, listen)
    agent.get(SYSTEM_PROMPT).section(PromptSection("mine", 1, "x"))
    other.get(SYSTEM_PROMPT).section(PromptSection("theirs", 1, "x"))
    ctx.get(SYSTEM_PROMPT).section(PromptSection("global", 1, "x"))
    assert heard == [("agent-listener", "mine")]


def test_a_change_listener_that_raises_is_contained_and_reported() -> None:
    failures: list[ListenerFailure] = []
    ctx = Context(on_listener_error=failures.append)
    ctx.plugin(plugin)

    async def broken(change: PromptChange) -> None:
        raise RuntimeError("boom")

    ctx.on(CHANGE, broken)
    sp = ctx.get(SYSTEM_PROMPT)
    sp.section(PromptSection("kept", 1, "x"))
    assert ("kept", 1, False) in sp.describe()[""]["sections"]
    assert [(f.event, type(f.error)) for f in failures] == [("system-prompt/change", RuntimeError)]


@pytest.mark.anyio
async def test_a_change_listener_that_suspends_rolls_the_registration_back(
    ctx: Context, sp: SystemPrompt
) -> None:
    async def suspends(change: PromptChange) -> None:
        await anyio.lowlevel.checkpoint()

    before = sp.describe()
    ctx.on(CHANGE, suspends)
    with pytest.raises(PromptError, match=r'a "system-prompt/change" listener suspended'):
        sp.section(PromptSection("x", 1, "x"))
    assert sp.describe() == before


def test_unloading_a_plugin_restores_every_registry() -> None:
    ctx = Context()
    ctx.plugin(plugin, {"persona": "p"})
    sp = ctx.get(SYSTEM_PROMPT)
    before_registry, before_host = sp.describe(), ctx.describe()

    def apply(plugin_ctx: Context, config: object) -> None:
        mine = plugin_ctx.get(SYSTEM_PROMPT)
        mine.section(PromptSection("tool:bash", 105, "Check the [exit code: N] marker."))
        mine.context(PromptContext("sandbox", 110, "sandboxed"))
        mine.variable("provider", lambda context: "deepseek")
        mine.tools(lambda context: ToolSet((ToolSchema("bash", "Run a command."),)))
        mine.suppress_runtime_context()
        scoped = plugin_ctx.scoped("agent-1").get(SYSTEM_PROMPT)
        scoped.section(PromptSection(PERSONA_SECTION, 0, "per-agent"))
        scoped.variable("cwd", lambda context: "/w")

        async def listener(assembly: object, context: object, next: object) -> object:
            return assembly

        plugin_ctx.on(CHANGE, listener)

    loaded = ctx.plugin(Plugin(name="tools-and-more", apply=apply))
    after = sp.describe()
    assert after != before_registry
    assert set(after) == {"", "agent-1"}
    loaded.unload()
    assert sp.describe() == before_registry
    assert ctx.describe() == before_host


def test_a_plugin_that_fails_in_apply_leaves_no_registration(ctx: Context, sp: SystemPrompt) -> None:
    before = sp.describe()

    def apply(plugin_ctx: Context, config: object) -> None:
        plugin_ctx.get(SYSTEM_PROMPT).section(PromptSection("first", 1, "x"))
        plugin_ctx.get(SYSTEM_PROMPT).section(PromptSection(PERSONA_SECTION, 0, "clash"))

    with pytest.raises(DuplicatePromptNameError):  # a DshError from apply propagates as itself
        ctx.plugin(Plugin(name="clashing", apply=apply))
    assert sp.describe() == before


def test_disposing_a_scope_removes_its_registrations(ctx: Context, sp: SystemPrompt) -> None:
    before = sp.describe()
    scoped = ctx.scoped("agent")
    scoped.get(SYSTEM_PROMPT).section(PromptSection(PERSONA_SECTION, 0, "mine"))
    scoped.get(SYSTEM_PROMPT).suppress_runtime_context()
    assert "agent" in sp.describe()
    scoped.dispose()
    assert sp.describe() == before


def test_registering_through_a_disposed_context_is_refused_and_leaves_nothing(
    ctx: Context, sp: SystemPrompt
) -> None:
    scoped = ctx.scoped("gone")
    view = scoped.get(SYSTEM_PROMPT)
    scoped.dispose()
    before = sp.describe()
    with pytest.raises(RuntimeError, match="is disposed"):
        view.section(PromptSection("late", 1, "x"))
    assert sp.describe() == before


def test_the_same_tool_provider_twice_gives_two_entries(sp: SystemPrompt) -> None:
    first = sp.tools(no_tools)
    sp.tools(no_tools)
    assert sp.describe()[""]["tools"] == 2
    first()
    assert sp.describe()[""]["tools"] == 1


def test_describe_keeps_two_live_scopes_with_one_path_apart(ctx: Context) -> None:
    ctx.scoped("agent").get(SYSTEM_PROMPT).section(PromptSection("x", 1, "first"))
    ctx.scoped("agent").get(SYSTEM_PROMPT).section(PromptSection("x", 1, "second"))
    described = ctx.get(SYSTEM_PROMPT).describe()
    assert set(described) == {"", "agent", "agent#2"}
