"""The tool registry: scoped visibility, duplicates, disposal, and the execution pipeline's error results."""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType
from typing import Any

import anyio
import pytest
from jsonschema import Draft202012Validator

from dsh.runtime.kernel import Context, NoConfig, Plugin
from dsh.runtime.llm import CallId, ToolCallBlock
from dsh.runtime.tools import (
    EXECUTOR,
    INVALID_ARGUMENTS,
    TOOL_FAILED,
    TOOLS,
    UNKNOWN_TOOL,
    ArgumentValidator,
    DuplicateToolError,
    Tool,
    ToolContext,
    ToolDefinitionError,
    ToolResult,
    arguments,
)
from dsh.runtime.tools import plugin as tools_plugin

ECHO_SCHEMA = {
    "type": "object",
    "properties": {"text": {"type": "string"}, "times": {"type": "integer", "minimum": 1}},
    "required": ["text"],
}


async def echo(arguments: dict[str, Any], context: ToolContext) -> str:
    return str(arguments["text"]) * int(arguments.get("times", 1))


def make_tool(name: str = "echo", description: str = "Echo the text.", execute: Any = echo) -> Tool:
    return Tool(name=name, description=description, parameters=ECHO_SCHEMA, execute=execute)


def host() -> Context:
    ctx = Context()
    ctx.plugin(tools_plugin)
    return ctx


def call_context(ctx: Context) -> ToolContext:
    return ToolContext(ctx=ctx, cwd=Path.cwd(), call_id="call_1")


def test_scoped_tools_shadow_globals_for_their_scope_only() -> None:
    ctx = host()
    ctx.get(TOOLS).register(make_tool())
    agent = ctx.scoped("agent")
    agent.get(TOOLS).register(make_tool(description="Scoped echo."))
    agent.get(TOOLS).register(make_tool(name="only_here"))
    assert [t.description for t in agent.scoped("child").get(TOOLS).visible() if t.name == "echo"] == [
        "Scoped echo."
    ]
    assert [t.name for t in ctx.get(TOOLS).visible()] == ["echo"]
    assert [t.name for t in ctx.scoped("other").get(TOOLS).visible()] == ["echo"]
    agent.dispose()
    assert [t.description for t in ctx.get(TOOLS).visible()] == ["Echo the text."]


def test_duplicates_in_one_layer_raise() -> None:
    ctx = host()
    ctx.get(TOOLS).register(make_tool())
    with pytest.raises(DuplicateToolError, match='tool "echo" is already registered in the global layer'):
        ctx.get(TOOLS).register(make_tool())


def test_unloading_a_plugin_removes_its_tools() -> None:
    ctx = host()
    registry = ctx.get(TOOLS)
    before = registry.visible()

    def apply(plugin_ctx: Context, config: NoConfig) -> None:
        plugin_ctx.get(TOOLS).register(make_tool())
        plugin_ctx.scoped("agent").get(TOOLS).register(make_tool(name="scoped"))

    loaded = ctx.plugin(Plugin(name="echoes", apply=apply))
    assert [t.name for t in registry.visible()] == ["echo"]
    loaded.unload()
    assert registry.visible() == before


def test_bad_definitions_are_refused() -> None:
    with pytest.raises(ToolDefinitionError, match='tool name "bad name" is invalid'):
        make_tool(name="bad name")
    with pytest.raises(ToolDefinitionError, match='"type": "object"'):
        Tool(name="t", description="", parameters={"type": "string"}, execute=echo)
    with pytest.raises(ToolDefinitionError, match="not a valid JSON schema"):
        host().get(TOOLS).register(
            Tool(name="t", description="", parameters={"type": "object", "required": 3}, execute=echo)
        )


def test_a_schema_is_checked_once_per_process_and_a_bad_one_refused_every_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    checked: list[object] = []
    real = Draft202012Validator.check_schema

    def counting(schema: Any) -> None:
        checked.append(schema)
        real(schema)

    monkeypatch.setattr(Draft202012Validator, "check_schema", counting)
    arguments._schema_problem.cache_clear()
    good = {"type": "object", "properties": {"n": {"type": "integer"}}, "x-unique": "test_registry"}
    bad = {"type": "object", "required": 3, "x-unique": "test_registry"}
    for _ in range(3):  # three hosts, as a re-run, a subagent or an ACP session each make one
        ctx = host()
        ctx.get(TOOLS).register(Tool(name="t", description="", parameters=good, execute=echo))
        with pytest.raises(ToolDefinitionError, match="not a valid JSON schema: 3 is not of type 'array'"):
            ctx.get(TOOLS).register(Tool(name="u", description="", parameters=bad, execute=echo))
        ctx.dispose()
    assert len(checked) == 2  # each distinct schema once, the bad one's refusal remembered
    # the same schema written in another key order, or as an immutable mapping, is the same schema
    ArgumentValidator("v", MappingProxyType({"x-unique": "test_registry", **good}))
    assert len(checked) == 2


@pytest.mark.anyio
async def test_execute_validates_and_runs() -> None:
    ctx = host()
    tools = ctx.get(TOOLS)
    tools.register(make_tool())
    result = await tools.execute(
        ToolCallBlock(CallId("c1"), "echo", '{"text": "ab", "times": 2}'), call_context(ctx)
    )
    assert result == ToolResult("abab")


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ("{not json", "not valid JSON (Expecting property name enclosed in double quotes at position 1)"),
        ("[1]", "expected a JSON object, got list"),
        ('{"a":' + "[" * 100_000, "the JSON nests deeper than 128 arrays and objects; send one JSON object"),
        (
            '{"times": 0}',
            "- at $: 'text' is a required property\n- at $.times: 0 is less than the minimum of 1",
        ),
    ],
)
async def test_bad_arguments_become_model_facing_errors(arguments: str, expected: str) -> None:
    ctx = host()
    tools = ctx.get(TOOLS)
    tools.register(make_tool())
    result = await tools.execute(ToolCallBlock(CallId("c1"), "echo", arguments), call_context(ctx))
    assert result.is_error
    assert result.code == INVALID_ARGUMENTS
    assert result.text.startswith('invalid arguments for tool "echo"')
    assert expected in result.text


@pytest.mark.anyio
async def test_unknown_tool_and_a_failing_tool_are_error_results() -> None:
    async def broken(arguments: dict[str, Any], context: ToolContext) -> str:
        raise OSError("disk on fire")

    ctx = host()
    tools = ctx.get(TOOLS)
    tools.register(make_tool(name="broken", execute=broken))
    unknown = await tools.execute(ToolCallBlock(CallId("c1"), "ghost", "{}"), call_context(ctx))
    assert (unknown.code, unknown.text) == (UNKNOWN_TOOL, 'unknown tool "ghost"; available tools: broken')
    failed = await tools.execute(ToolCallBlock(CallId("c2"), "broken", '{"text": "x"}'), call_context(ctx))
    assert (failed.code, failed.text) == (TOOL_FAILED, 'tool "broken" failed: OSError: disk on fire')


@pytest.mark.anyio
async def test_an_executor_listener_replaces_how_a_call_runs_until_its_plugin_unloads() -> None:
    """The `tools/executor` waterfall: a listener sees the tool and the call and may hand back another executor
    (replay serves recorded results this way); its failure is contained like the tool's own."""
    seen: list[tuple[str, str]] = []

    async def recorded(arguments: dict[str, Any], context: ToolContext) -> str:
        return f"recorded {arguments['text']}"

    async def choose(execute: Any, tool: Tool, call: ToolCallBlock, context: ToolContext, next_: Any) -> Any:
        seen.append((tool.name, call.id))
        if tool.hermetic:
            return await next_(execute)
        return recorded

    def apply(ctx: Context, config: NoConfig) -> None:
        ctx.on(EXECUTOR, choose)

    ctx = host()
    tools = ctx.get(TOOLS)
    tools.register(make_tool())
    tools.register(
        Tool(
            name="remote", description="Echo far away.", parameters=ECHO_SCHEMA, execute=echo, hermetic=False
        )
    )
    listener = ctx.plugin(Plugin(name="serve-recorded", apply=apply))
    here = await tools.execute(ToolCallBlock(CallId("c1"), "echo", '{"text": "a"}'), call_context(ctx))
    far = await tools.execute(ToolCallBlock(CallId("c2"), "remote", '{"text": "b"}'), call_context(ctx))
    assert (here.text, far.text) == ("a", "recorded b")
    assert seen == [("echo", "c1"), ("remote", "c2")]
    listener.unload()
    assert (
        await tools.execute(ToolCallBlock(CallId("c3"), "remote", '{"text": "c"}'), call_context(ctx))
    ).text == "c"
    assert len(seen) == 2


@pytest.mark.anyio
async def test_cancellation_propagates_out_of_a_running_tool() -> None:
    cleaned = anyio.Event()

    async def slow(arguments: dict[str, Any], context: ToolContext) -> str:
        try:
            await anyio.sleep_forever()
        finally:
            cleaned.set()
        return "unreachable"

    ctx = host()
    tools = ctx.get(TOOLS)
    tools.register(make_tool(name="slow", execute=slow))
    with anyio.move_on_after(0.05) as scope:
        await tools.execute(ToolCallBlock(CallId("c1"), "slow", '{"text": "x"}'), call_context(ctx))
    assert scope.cancelled_caught
    assert cleaned.is_set()
