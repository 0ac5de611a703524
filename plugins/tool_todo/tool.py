"""The `todo_write` tool: its description and schema (names as the original's, so recorded sessions replay), the
checks a schema cannot express, the `todo/write` event it logs, the plugin and its config."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import msgspec

from dsh.runtime.agent import Agent
from dsh.runtime.kernel import Context, Plugin
from dsh.runtime.session import Todo, TodoWrite, TodoWriteData
from dsh.runtime.tools import TOOLS, Tool, ToolContext, ToolResult

__all__ = ["INVALID_TODOS", "NO_SESSION_LOG", "STATUSES", "TodoConfig", "check_todos", "plugin", "summary"]

NAME = "todo_write"
STATUSES: Final = ("pending", "in_progress", "completed")
INVALID_TODOS: Final = "INVALID_TODOS"
"""Error code: the list breaks a rule the schema cannot express (blank or repeated content, too many in progress)."""
NO_SESSION_LOG: Final = "NO_SESSION_LOG"
"""Error code: the call has no session log to record the list in (it ran outside an agent's session)."""


class TodoConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """`allow_parallel_in_progress`: whether more than one item may be `in_progress` at once. Required, with no
    default, as in the original: whether the agent works on one thing at a time is the deployment's decision."""

    allow_parallel_in_progress: bool


def describe(config: TodoConfig) -> str:
    """The tool's description: its whole contract (it has no prompt section)."""
    in_progress = (
        "Several items may be in_progress at once when their work really runs in parallel."
        if config.allow_parallel_in_progress
        else "At most one item may be in_progress at a time."
    )
    return (
        "Keep a todo list of your plan for the current task, which the user can follow. Use it for work of "
        "several steps: write the plan before you start, mark an item in_progress when you begin it and completed "
        "as soon as it is done, and add items you discover on the way. Skip it for a task of one or two quick "
        "steps. Every call replaces the whole list, so send every item, with its current status, each time; an "
        "empty list clears it. Each item is {content, status}: content says what to do in a few words, non-empty "
        f"and different from every other item's; status is pending, in_progress or completed. {in_progress}"
    )


def parameters() -> dict[str, Any]:
    """The JSON schema of the arguments: `todos`, a list of `{content, status}` items with no other keys."""
    return {
        "type": "object",
        "properties": {
            "todos": {
                "type": "array",
                "description": "The complete todo list; it replaces the previous one.",
                "items": {
                    "type": "object",
                    "properties": {
                        "content": {
                            "type": "string",
                            "minLength": 1,
                            "description": 'What to do, in a few words, e.g. "Run the failing test".',
                        },
                        "status": {
                            "type": "string",
                            "enum": list(STATUSES),
                            "description": "pending (not started), in_progress (being worked on) or completed.",
                        },
                    },
                    "required": ["content", "status"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["todos"],
        "additionalProperties": False,
    }


def check_todos(items: Sequence[Mapping[str, str]], config: TodoConfig) -> tuple[tuple[Todo, ...], list[str]]:
    """The list as it is logged (content trimmed), and every problem with it, each naming the item. Items have
    already passed the schema (`content` a string, `status` one of STATUSES, no other keys)."""
    todos: list[Todo] = []
    problems: list[str] = []
    first_at: dict[str, int] = {}
    for index, item in enumerate(items):
        content = item["content"].strip()
        if not content:
            problems.append(f"todos[{index}].content is blank; say what the item is in a few words")
        elif content in first_at:
            problems.append(
                f'todos[{index}].content "{content}" repeats todos[{first_at[content]}]; each item must differ, '
                "so merge them or tell them apart"
            )
        else:
            first_at[content] = index
        todos.append(Todo(content=content, status=item["status"]))
    working = [index for index, todo in enumerate(todos) if todo.status == "in_progress"]
    if len(working) > 1 and not config.allow_parallel_in_progress:
        where = ", ".join(f"todos[{index}]" for index in working)
        problems.append(
            f"{len(working)} items are in_progress ({where}); at most one may be, so mark the others pending or "
            "completed"
        )
    return tuple(todos), problems


def summary(todos: Sequence[Todo]) -> str:
    """The result text: the counts by status, as the original words them."""
    count = {status: sum(1 for todo in todos if todo.status == status) for status in STATUSES}
    return (
        f"Updated todo list: {count['pending']} pending, {count['in_progress']} in progress, "
        f"{count['completed']} completed."
    )


def _make_tool(config: TodoConfig) -> Tool:
    async def execute(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        todos, problems = check_todos(arguments["todos"], config)
        if problems:
            return ToolResult.error(
                INVALID_TODOS,
                "todo_write refused the list, and the previous one stands:\n"
                + "\n".join(f"- {problem}" for problem in problems),
            )
        if context.log is None:
            return ToolResult.error(
                NO_SESSION_LOG,
                "todo_write records the list in the session log, and this call has none (it ran outside an "
                "agent's session); nothing was recorded",
            )
        event = TodoWrite(data=TodoWriteData(todos=todos))
        agent = context.agent
        if isinstance(agent, Agent) and agent.log is context.log:
            await agent.append(
                event
            )  # through the agent, so agent/event listeners (a client's plan view) see it
        else:
            context.log.append(event)
        return ToolResult(summary(todos))

    return Tool(name=NAME, description=describe(config), parameters=parameters(), execute=execute)


def _apply(ctx: Context, config: TodoConfig) -> None:
    ctx.get(TOOLS).register(_make_tool(config))


plugin = Plugin(
    name="tool-todo",
    apply=_apply,
    config=TodoConfig,
    needs=(TOOLS,),
    description="the todo_write tool: the agent's plan, logged as todo/write (no prompt section)",
)
