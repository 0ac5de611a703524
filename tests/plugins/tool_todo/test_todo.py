"""todo_write: valid and invalid lists through the registry's real pipeline (schema, then the tool's own checks),
the `todo/write` event in a real session log, the result text, the config and loading/unloading."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from dsh.plugins.tool_todo import INVALID_TODOS, NO_SESSION_LOG, STATUSES, TodoConfig, plugin
from dsh.runtime.kernel import ConfigError, Context
from dsh.runtime.llm import CallId, ToolCallBlock
from dsh.runtime.session import (
    CountingIds,
    FixedClock,
    SessionLog,
    SessionStore,
    SessionStoreProtocol,
    open_log,
)
from dsh.runtime.tools import INVALID_ARGUMENTS, TOOLS, ToolContext, ToolResult

from ..tool_host import model_view, registries, tool_host

PARALLEL = {"allow_parallel_in_progress": True}
SERIAL = {"allow_parallel_in_progress": False}
# The list the recording fixtures/harness/todo-write/session.jsonl sent, and what the original answered.
RECORDED = [
    {"content": "read the code", "status": "in_progress"},
    {"content": "watch the background build", "status": "in_progress"},
    {"content": "write the fix", "status": "pending"},
]
RECORDED_RESULT = "Updated todo list: 1 pending, 2 in progress, 0 completed."


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SessionStoreProtocol]:
    with SessionStore(
        tmp_path / "sessions.db", clock=FixedClock(1_000, step=1), ids=CountingIds("s"), synchronous="NORMAL"
    ) as opened:
        yield opened


def host(config: dict[str, bool]) -> Context:
    ctx = tool_host()
    ctx.plugin(plugin, config)
    return ctx


@asynccontextmanager
async def session(store: SessionStoreProtocol) -> AsyncIterator[SessionLog]:
    info = store.create(cwd="/w")
    async with open_log(store, info.id) as log:
        yield log


async def call(ctx: Context, arguments: object, log: SessionLog | None) -> ToolResult:
    context = ToolContext(ctx=ctx, cwd=Path("/w"), call_id="c1", log=log, turn=1, step=1)
    return await ctx.get(TOOLS).execute(
        ToolCallBlock(CallId("c1"), "todo_write", json.dumps(arguments)), context
    )


def logged(store: SessionStoreProtocol, log: SessionLog) -> list[Any]:
    return [json.loads(event.data) for event in store.events(log.info.id, types=("todo/write",))]


@pytest.mark.anyio
async def test_the_recorded_list_is_logged_and_answered_as_the_original_did(
    store: SessionStoreProtocol,
) -> None:
    ctx = host(PARALLEL)
    async with session(store) as log:
        result = await call(ctx, {"todos": RECORDED}, log)
        await log.flush()
    assert result == ToolResult(RECORDED_RESULT)
    assert logged(store, log) == [{"todos": RECORDED}]


@pytest.mark.anyio
async def test_each_call_replaces_the_whole_list(store: SessionStoreProtocol) -> None:
    ctx = host(SERIAL)
    first = [{"content": "a", "status": "in_progress"}, {"content": "b", "status": "pending"}]
    second = [{"content": "a", "status": "completed"}, {"content": "b", "status": "in_progress"}]
    async with session(store) as log:
        assert (await call(ctx, {"todos": first}, log)).text == (
            "Updated todo list: 1 pending, 1 in progress, 0 completed."
        )
        assert (await call(ctx, {"todos": second}, log)).text == (
            "Updated todo list: 0 pending, 1 in progress, 1 completed."
        )
        assert (await call(ctx, {"todos": []}, log)).text == (
            "Updated todo list: 0 pending, 0 in progress, 0 completed."
        )
    assert logged(store, log) == [{"todos": first}, {"todos": second}, {"todos": []}]


@pytest.mark.anyio
async def test_content_is_logged_trimmed(store: SessionStoreProtocol) -> None:
    ctx = host(SERIAL)
    async with session(store) as log:
        result = await call(ctx, {"todos": [{"content": "  run the tests \n", "status": "pending"}]}, log)
    assert not result.is_error
    assert logged(store, log) == [{"todos": [{"content": "run the tests", "status": "pending"}]}]


def item(content: object = "do it", status: object = "pending", **extra: object) -> dict[str, object]:
    return {"content": content, "status": status, **extra}


# (arguments, config, error code, what the error text must say): each case names what is wrong and where.
INVALID: dict[str, tuple[object, dict[str, bool], str, list[str]]] = {
    "no todos": ({}, PARALLEL, INVALID_ARGUMENTS, ["at $:", "'todos' is a required property"]),
    "todos not a list": (
        {"todos": "a, b"},
        PARALLEL,
        INVALID_ARGUMENTS,
        ["at $.todos:", "is not of type 'array'"],
    ),
    "an item not an object": ({"todos": ["a"]}, PARALLEL, INVALID_ARGUMENTS, ["at $.todos[0]:", "'object'"]),
    "content missing": (
        {"todos": [{"status": "pending"}]},
        PARALLEL,
        INVALID_ARGUMENTS,
        ["at $.todos[0]:", "'content' is a required property"],
    ),
    "content not a string": (
        {"todos": [item(), item(content=7)]},
        PARALLEL,
        INVALID_ARGUMENTS,
        ["at $.todos[1].content:", "7 is not of type 'string'"],
    ),
    "content empty": (
        {"todos": [item(content="")]},
        PARALLEL,
        INVALID_ARGUMENTS,
        ["at $.todos[0].content:", "should be non-empty"],
    ),
    "content blank": (
        {"todos": [item(), item(content=" \t\n")]},
        PARALLEL,
        INVALID_TODOS,
        ["todos[1].content is blank"],
    ),
    "content repeated": (
        {"todos": [item("write the fix"), item("read"), item("write the fix", "completed")]},
        PARALLEL,
        INVALID_TODOS,
        ['todos[2].content "write the fix" repeats todos[0]'],
    ),
    "content repeated once trimmed": (
        {"todos": [item("write the fix"), item(" write the fix ")]},
        PARALLEL,
        INVALID_TODOS,
        ['todos[1].content "write the fix" repeats todos[0]'],
    ),
    "status missing": (
        {"todos": [{"content": "a"}]},
        PARALLEL,
        INVALID_ARGUMENTS,
        ["at $.todos[0]:", "'status' is a required property"],
    ),
    "status unknown": (
        {"todos": [item(status="done")]},
        PARALLEL,
        INVALID_ARGUMENTS,
        ["at $.todos[0].status:", "'done' is not one of ['pending', 'in_progress', 'completed']"],
    ),
    "an extra key": (
        {"todos": [item(id="1")]},
        PARALLEL,
        INVALID_ARGUMENTS,
        ["at $.todos[0]:", "('id' was unexpected)"],
    ),
    "an extra top-level key": (
        {"todos": [], "merge": True},
        PARALLEL,
        INVALID_ARGUMENTS,
        ["at $:", "('merge' was unexpected)"],
    ),
    "two in progress when one is allowed": (
        {"todos": RECORDED},
        SERIAL,
        INVALID_TODOS,
        ["2 items are in_progress (todos[0], todos[1]); at most one may be"],
    ),
}


@pytest.mark.anyio
@pytest.mark.parametrize("case", list(INVALID))
async def test_an_invalid_list_is_refused_naming_the_problem_and_nothing_is_logged(
    case: str, store: SessionStoreProtocol
) -> None:
    arguments, config, code, says = INVALID[case]
    ctx = host(config)
    async with session(store) as log:
        result = await call(ctx, arguments, log)
    assert result.is_error
    assert result.code == code
    for words in says:
        assert words in result.text, result.text
    if code == INVALID_TODOS:
        assert result.text.startswith("todo_write refused the list, and the previous one stands:\n- ")
    assert logged(store, log) == []


@pytest.mark.anyio
async def test_every_problem_is_reported_at_once(store: SessionStoreProtocol) -> None:
    ctx = host(SERIAL)
    todos = [item("a", "in_progress"), item(" "), item("a"), item("b", "in_progress")]
    async with session(store) as log:
        result = await call(ctx, {"todos": todos}, log)
    assert result.text.splitlines()[1:] == [
        "- todos[1].content is blank; say what the item is in a few words",
        '- todos[2].content "a" repeats todos[0]; each item must differ, so merge them or tell them apart',
        "- 2 items are in_progress (todos[0], todos[3]); at most one may be, so mark the others pending or "
        "completed",
    ]


@pytest.mark.anyio
async def test_without_a_session_log_the_call_is_an_error() -> None:
    result = await call(host(PARALLEL), {"todos": RECORDED}, None)
    assert result.is_error
    assert result.code == NO_SESSION_LOG
    assert "outside an agent's session" in result.text


def test_the_config_key_is_required_as_in_the_original() -> None:
    with pytest.raises(ConfigError, match="allow_parallel_in_progress") as caught:
        host({})
    assert caught.value.plugin == "tool-todo"
    with pytest.raises(ConfigError) as unknown:
        host({"allow_parallel_in_progress": True, "max_items": 3})  # type: ignore[dict-item]
    assert "max_items" in str(unknown.value)
    assert TodoConfig(allow_parallel_in_progress=False).allow_parallel_in_progress is False


def test_the_description_states_the_in_progress_rule_the_config_chose() -> None:
    serial = host(SERIAL).get(TOOLS).get("todo_write")
    parallel = host(PARALLEL).get(TOOLS).get("todo_write")
    assert serial is not None
    assert parallel is not None
    assert "At most one item may be in_progress at a time." in serial.description
    assert "Several items may be in_progress at once" in parallel.description
    assert serial.parameters == parallel.parameters
    statuses = serial.parameters["properties"]["todos"]["items"]["properties"]["status"]["enum"]
    assert tuple(statuses) == STATUSES


def test_it_registers_no_section_and_unloading_removes_the_tool() -> None:
    ctx = tool_host()
    before = registries(ctx)
    system_before, _ = model_view(ctx)
    loaded = ctx.plugin(plugin, PARALLEL)
    system, tools = model_view(ctx)
    assert [tool["name"] for tool in tools] == ["todo_write"]
    assert system == system_before  # the description carries the whole contract
    loaded.unload()
    assert registries(ctx) == before
