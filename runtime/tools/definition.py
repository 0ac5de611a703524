"""What a tool is: its definition (name, description, JSON-schema parameters, async execute), the context one call
runs in, and the result it returns to the model. The call itself is the model's `ToolCallBlock` (dsh.runtime.llm),
run as the model sent it."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dsh.runtime.kernel import Context
from dsh.runtime.kernel.errors import ToolError
from dsh.runtime.llm import ImageBlock

if TYPE_CHECKING:
    from dsh.runtime.session import SessionLog

__all__ = [
    "TOOL_NAME",
    "AddedContext",
    "Tool",
    "ToolContext",
    "ToolDefinitionError",
    "ToolResult",
]

TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


class ToolDefinitionError(ToolError, ValueError):
    """A tool definition is malformed (bad name, parameters that are not an object schema)."""

    def __init__(self, message: str, *, tool: str) -> None:
        super().__init__(message)
        self.tool = tool


@dataclass(frozen=True)
class AddedContext:
    """Text a plugin (a hook) adds for the model's next step: after the call's result is logged, the loop queues it
    as steering (`next-step`) with the source `{kind: "plugin", plugin}`, one message of one text block per entry."""

    texts: tuple[str, ...]
    plugin: str


@dataclass(frozen=True)
class ToolResult:
    """What a call returns to the model. `is_error` marks a failed call; `code` is a stable machine-readable
        reason (`INVALID_ARGUMENTS`, `UNKNOWN_TOOL`, `TOOL_FAILED`, `ABORTED`, ...); `meta` is logged beside the
        result for clients and never shown to the model. `images` follow the text in the logged result (an MCP tool
        that returns a screenshot); a transport that cannot send a tool's image names it instead. `context` is text a
    hook adds after the result (PostToolUse's additional context), entered into the conversation after the step."""

    text: str
    is_error: bool = False
    code: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)
    context: tuple[AddedContext, ...] = ()
    images: tuple[ImageBlock, ...] = ()

    @classmethod
    def error(cls, code: str, text: str) -> ToolResult:
        return cls(text=text, is_error=True, code=code)


@dataclass(frozen=True)
class ToolContext:
    """Where one call runs: the calling agent's context (its scope and services), its workspace and the call id.

    When the agent loop runs the call, `log` is the session's log (a tool that records a fact of its own, such as
    `todo/write`, appends it there), `turn` and `step` locate the call, and `agent` is the calling
    `dsh.runtime.agent.Agent` (subagent tools fork and spawn from it). Outside a loop they are None / 0.

    Cancellation arrives as anyio cancellation of the task running `execute`; a tool that must clean up does so in
    `finally` (with a shielded cancel scope for awaits).

    `approved` says the call was approved (its tool's `approval` asked, or a hook asked, and a person or the policy
    granted it): bash runs an approved escalation under the wider sandbox mode it asked for.
    """

    ctx: Context
    cwd: Path
    call_id: str
    log: SessionLog | None = None
    turn: int = 0
    step: int = 0
    agent: Any = None
    approved: bool = False


Execute = Callable[[dict[str, Any], ToolContext], Awaitable[ToolResult | str]]


@dataclass(frozen=True)
class Tool:
    """A tool: `name` (what the model calls), `description` (its semantics and when to use it: the one place they
    live), `parameters` (a JSON schema of type object) and `execute(arguments, context)`.

    `execute` receives arguments already validated against `parameters`; it returns a ToolResult, or a plain
    string for a successful text result. An exception it raises becomes an error result, never a crash.

    `hermetic` says whether the tool's result depends only on its arguments and the workspace: False for a tool
    that reaches the network or another outside service, so a replay serves its recorded result instead of
    running it (replay's recorded tools). `timing_dependent` says that its result depends on how far background
    work has got when it runs (a read of a background job): a replay still runs it, for what it does, and serves
    the model the recorded result. `approval(arguments, context)`, when given, says whether this call needs a
    person's approval before it runs: the reason to ask with, or None (bash: an escalation out of its sandbox).
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    execute: Execute
    hermetic: bool = True
    timing_dependent: bool = False
    approval: Callable[[dict[str, Any], ToolContext], str | None] | None = None

    def __post_init__(self) -> None:
        if not TOOL_NAME.fullmatch(self.name):
            raise ToolDefinitionError(
                f'tool name "{self.name}" is invalid; use 1-64 letters, digits, "_" or "-"', tool=self.name
            )
        if self.parameters.get("type") != "object":
            raise ToolDefinitionError(
                f'tool "{self.name}": parameters must be a JSON schema with "type": "object"', tool=self.name
            )
