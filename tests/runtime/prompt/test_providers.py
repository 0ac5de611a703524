"""Text, variable and tool providers: each takes the assemble context or nothing (the RFC keeps zero-argument
providers valid), any other signature is refused at registration naming the entry, and whatever a provider raises
during an assembly comes out as the prompt's own error naming the section, context, variable or tool provider."""

from __future__ import annotations

from typing import Any

import pytest

from dsh.runtime.kernel import Context
from dsh.runtime.prompt import (
    CHANGE,
    AssembleContext,
    AssembledText,
    PromptAssemblyError,
    PromptChange,
    PromptContext,
    PromptError,
    PromptProviderError,
    PromptSection,
    ProviderResultError,
    ProviderSignatureError,
    SystemPrompt,
    ToolSchema,
    ToolSet,
    render_context_snapshot,
    render_prompt,
)

pytestmark = pytest.mark.anyio


def schema(name: str) -> ToolSchema:
    return ToolSchema(name, f"The {name} tool.", {"type": "object", "properties": {}})


# -- zero-argument providers -------------------------------------------------------------------------------


async def test_zero_argument_providers_of_every_kind_render(sp: SystemPrompt) -> None:
    sp.section(PromptSection("tool:static", 100, lambda: "Guidance from a zero-argument provider."))
    sp.context(PromptContext("sandbox", 110, lambda: "Sandbox: {{mode}}."))
    sp.variable("mode", lambda: "read-only")
    sp.tools(lambda: ToolSet((schema("bash"),)))
    assembly = await sp.assemble()
    assert assembly.sections[-1] == AssembledText("tool:static", "Guidance from a zero-argument provider.")
    assert assembly.variables == {"mode": "read-only"}
    assert [t.name for t in assembly.tools] == ["bash"]
    assert render_prompt(assembly).endswith("\n\nGuidance from a zero-argument provider.")
    assert render_context_snapshot(assembly).endswith("\n\nSandbox: read-only.")


async def test_a_provider_that_may_take_the_context_is_given_it(sp: SystemPrompt) -> None:
    seen: list[object] = []

    def optional(context: AssembleContext | None = None) -> str:
        seen.append(context)
        return "optional"

    def variadic(*args: Any) -> str:
        seen.append(args)
        return "variadic"

    sp.section(PromptSection("a", 1, optional))
    sp.variable("v", variadic)
    context = AssembleContext(facts={"model": "m"})
    await sp.assemble(context)
    assert seen == [(context,), context]  # variables resolve first


async def test_a_zero_argument_provider_is_called_on_every_assembly(sp: SystemPrompt) -> None:
    calls: list[int] = []

    def counter() -> str:
        calls.append(len(calls))
        return str(len(calls))

    sp.variable("n", counter)
    assert [(await sp.assemble()).variables["n"] for _ in range(3)] == ["1", "2", "3"]


# -- bad signatures, refused at registration ---------------------------------------------------------------


def two(context: AssembleContext, other: object) -> str:
    return "never"


def keyword_only(*, context: AssembleContext) -> str:
    return "never"


@pytest.mark.parametrize("bad", [two, keyword_only], ids=["two-arguments", "keyword-only"])
def test_a_section_provider_with_a_bad_signature_is_refused_naming_it(
    ctx: Context, sp: SystemPrompt, bad: Any
) -> None:
    before = sp.describe()
    changes: list[PromptChange] = []

    async def heard(change: PromptChange) -> None:
        changes.append(change)

    ctx.on(CHANGE, heard)
    with pytest.raises(ProviderSignatureError) as caught:
        sp.section(PromptSection("tool:bad", 100, bad))
    assert str(caught.value).startswith(
        'prompt section "tool:bad" text provider must take the assemble context (one positional argument) or '
        "nothing; its signature is ("
    )
    assert (caught.value.kind, caught.value.name) == ("section", "tool:bad")
    assert isinstance(caught.value, TypeError)
    assert isinstance(caught.value, PromptError)
    assert sp.describe() == before
    assert changes == []


def test_context_variable_and_tool_providers_with_bad_signatures_are_refused(sp: SystemPrompt) -> None:
    before = sp.describe()
    with pytest.raises(ProviderSignatureError, match=r'^prompt context "sandbox" text provider must take'):
        sp.context(PromptContext("sandbox", 110, two))  # type: ignore[arg-type]  # the wrong signature is the point
    with pytest.raises(
        ProviderSignatureError, match=r'^prompt variable "model" provider must take'
    ) as caught:
        sp.variable("model", two)  # type: ignore[arg-type]  # the wrong signature is the point
    assert (caught.value.kind, caught.value.name) == ("variable", "model")
    with pytest.raises(ProviderSignatureError, match=r"^a tool provider \(.*\.two\) must take") as tools:
        sp.tools(two)  # type: ignore[arg-type]  # the wrong signature is the point
    assert tools.value.kind == "tools"
    assert tools.value.name.endswith(".two")
    assert sp.describe() == before


# -- a provider that raises --------------------------------------------------------------------------------


def broken(context: AssembleContext) -> str:
    raise LookupError("no agent in this context")


async def test_a_raising_section_provider_is_a_prompt_error_naming_the_section(sp: SystemPrompt) -> None:
    sp.section(PromptSection("tool:broken", 100, broken))
    with pytest.raises(PromptProviderError) as caught:
        await sp.assemble()
    error = caught.value
    assert str(error) == (
        'prompt section "tool:broken" text provider raised LookupError: no agent in this context'
    )
    assert (error.kind, error.name) == ("section", "tool:broken")
    assert isinstance(error, PromptAssemblyError)
    assert not isinstance(error, TypeError)
    assert isinstance(error.__cause__, LookupError)


async def test_a_raising_zero_argument_provider_names_its_entry_too(sp: SystemPrompt) -> None:
    def bare() -> str:
        raise KeyError("missing")

    sp.context(PromptContext("sandbox", 110, bare))
    with pytest.raises(
        PromptProviderError, match=r"""^prompt context "sandbox" text provider raised KeyError: 'missing'$"""
    ):
        await sp.assemble()


async def test_a_raising_variable_provider_is_a_prompt_error_naming_the_variable(sp: SystemPrompt) -> None:
    sp.variable("model", broken)
    with pytest.raises(PromptProviderError) as caught:
        await sp.assemble()
    assert (
        str(caught.value) == 'prompt variable "model" provider raised LookupError: no agent in this context'
    )
    assert (caught.value.kind, caught.value.name) == ("variable", "model")


async def test_a_raising_tool_provider_is_a_prompt_error_naming_the_provider(sp: SystemPrompt) -> None:
    def tools(context: AssembleContext) -> ToolSet:
        raise RuntimeError("registry gone")

    sp.tools(tools)
    with pytest.raises(
        PromptProviderError, match=r"^a tool provider \(.*\.tools\) raised RuntimeError: registry gone$"
    ):
        await sp.assemble()


async def test_a_provider_whose_call_fails_inside_is_not_a_bare_type_error(sp: SystemPrompt) -> None:
    # A TypeError raised inside a provider (here: a bad call it makes) is the provider's failure, named.
    def calls_badly(context: AssembleContext) -> str:
        return len(3)  # type: ignore[arg-type,return-value]  # the inner TypeError is the point

    sp.section(PromptSection("tool:inner", 100, calls_badly))
    with pytest.raises(PromptProviderError) as caught:
        await sp.assemble()
    assert not isinstance(caught.value, ProviderResultError)
    assert 'prompt section "tool:inner"' in str(caught.value)
    assert isinstance(caught.value.__cause__, TypeError)


async def test_a_tool_provider_returning_something_that_is_no_schema_is_named(sp: SystemPrompt) -> None:
    sp.tools(lambda context: ToolSet(({"name": "bash"},)))  # type: ignore[arg-type]  # the point
    with pytest.raises(ProviderResultError, match=r"returned a dict among its schemas, not a ToolSchema"):
        await sp.assemble()
