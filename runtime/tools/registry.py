"""The tool registry: which tools exist in which scope, and the execution pipeline of one call (parse, validate,
execute, contain failures)."""

from __future__ import annotations

import contextlib
import weakref
from dataclasses import dataclass, replace

import anyio

from dsh.runtime.kernel import Context, Disposer, NoConfig, Plugin, Scope, ServiceKey, Waterfall
from dsh.runtime.kernel.errors import ToolError
from dsh.runtime.llm import ToolCallBlock
from dsh.runtime.prompt import SYSTEM_PROMPT, AssembleContext, ToolSchema, ToolSet

from .approval import (
    APPROVER,
    DENIED,
    POST_EXECUTE,
    PRE_EXECUTE,
    REJECTED,
    Allow,
    Approval,
    ApprovalRequest,
    Ask,
    Deny,
    ToolExecution,
    denial_text,
    rejection_text,
)
from .arguments import ArgumentValidator
from .definition import Execute, Tool, ToolContext, ToolResult
from .environment import TOOL_ENV, ToolEnvironment
from .guard import restore_dumpable, undumpable

__all__ = [
    "EXECUTOR",
    "TOOLS",
    "TOOL_FAILED",
    "UNKNOWN_TOOL",
    "DuplicateToolError",
    "ToolRegistry",
    "ToolView",
    "plugin",
    "tool_set",
]

UNKNOWN_TOOL = "UNKNOWN_TOOL"
TOOL_FAILED = "TOOL_FAILED"

EXECUTOR = Waterfall[Execute, Tool]("tools/executor")
"""Which executor runs one call, after its arguments are validated: the value is the tool's own `execute`, the
arguments are `(tool, call, context)`. A listener may return another executor (replay serves a recorded result
instead of running a tool that cannot run in CI); with no listener the tool runs as defined. Whatever executor
comes back runs inside the pipeline's failure containment."""


class DuplicateToolError(ToolError, ValueError):
    """A tool name is registered twice in one scope layer."""

    def __init__(self, *, tool: str, scope: str) -> None:
        where = f'scope "{scope}"' if scope else "the global layer"
        super().__init__(
            f'tool "{tool}" is already registered in {where}; dispose the first registration first'
        )
        self.tool = tool
        self.scope = scope


@dataclass(frozen=True, eq=False)
class _Entry:
    """A registered tool: its argument validator and its schema as the model sees it are made once, at
    registration, from the same parameters (the schema is frozen, so every assembly shares it)."""

    tool: Tool
    validator: ArgumentValidator
    schema: ToolSchema
    scope: Scope | None


_SCHEMA_SCOPES = 256
"""At most this many scopes' schema tuples are kept."""


class ToolRegistry:
    """Tools by name per scope layer. A tool registered in a scope shadows a global tool of the same name there."""

    def __init__(self) -> None:
        # one session's calls pass the pre-execute seam and their approvals one at a time, in the order they
        # arrive (call order, for a step's parallel calls): hooks and approvals land in the log in one order
        self._gates: weakref.WeakKeyDictionary[object, anyio.Lock] = weakref.WeakKeyDictionary()
        self._layers: dict[Scope | None, dict[str, _Entry]] = {}
        # Each scope's visible schemas in name order, as the prompt's tool provider returns them: the same tuple
        # until the next registration or disposal anywhere, so an assembly can tell nothing changed by identity.
        self._schemas: dict[Scope | None, tuple[ToolSchema, ...]] = {}

    def bind_context(self, ctx: Context) -> ToolView:
        return ToolView(self, ctx)

    def _register(self, ctx: Context, tool: Tool) -> Disposer:
        entry = _Entry(
            tool,
            ArgumentValidator(tool.name, tool.parameters),
            ToolSchema(tool.name, tool.description, dict(tool.parameters)),
            ctx.scope,
        )
        layer = self._layers.setdefault(ctx.scope, {})
        if tool.name in layer:
            raise DuplicateToolError(tool=tool.name, scope=ctx.scope.path if ctx.scope else "")
        layer[tool.name] = entry
        self._schemas.clear()

        def undo() -> None:
            if layer.get(tool.name) is entry:
                del layer[tool.name]
            if not layer:
                self._layers.pop(entry.scope, None)
            self._schemas.clear()

        return ctx.effect(undo)

    def _visible(self, scope: Scope | None) -> dict[str, _Entry]:
        chain: list[Scope | None] = [None]
        if scope is not None:
            chain.extend(reversed(list(scope.chain())))
        visible: dict[str, _Entry] = {}
        for layer_scope in chain:  # global first, nearest scope last, so nearer layers shadow
            visible.update(self._layers.get(layer_scope, {}))
        return visible

    def schemas(self, scope: Scope | None) -> tuple[ToolSchema, ...]:
        """The schemas of the tools visible in `scope`, in name order (one tuple per registry state)."""
        schemas = self._schemas.get(scope)
        if schemas is None:
            if len(self._schemas) >= _SCHEMA_SCOPES:
                self._schemas.clear()
            entries = self._visible(scope)
            schemas = self._schemas[scope] = tuple(entries[name].schema for name in sorted(entries))
        return schemas

    def snapshot(self) -> dict[str, list[str]]:
        """Every layer's tool names, by scope path ('' for global): for tests and diagnostics."""
        return {
            (scope.path if scope else ""): sorted(layer) for scope, layer in self._layers.items() if layer
        }


class ToolView:
    """The registry as one context sees it: registrations land in its scope; lookups see its scope chain."""

    __slots__ = ("_ctx", "_registry")

    def __init__(self, registry: ToolRegistry, ctx: Context) -> None:
        self._registry = registry
        self._ctx = ctx

    def register(self, tool: Tool) -> Disposer:
        """Register `tool` in this context's scope; the disposer (also run when the plugin unloads) removes it."""
        return self._registry._register(self._ctx, tool)

    def visible(self) -> list[Tool]:
        """The tools visible here, sorted by name."""
        entries = self._registry._visible(self._ctx.scope)
        return [entries[name].tool for name in sorted(entries)]

    def snapshot(self) -> dict[str, list[str]]:
        """Every layer's tool names (the whole registry, not only this view's): for tests and diagnostics."""
        return self._registry.snapshot()

    def get(self, name: str) -> Tool | None:
        entry = self._registry._visible(self._ctx.scope).get(name)
        return entry.tool if entry else None

    async def execute(self, call: ToolCallBlock, context: ToolContext) -> ToolResult:
        """Run one call. Unknown tools, bad arguments and exceptions raised by the tool become error results the
        model can act on; cancellation propagates to the caller."""
        entries = self._registry._visible(self._ctx.scope)
        entry = entries.get(call.name)
        if entry is None:
            known = ", ".join(sorted(entries)) or "(none)"
            return ToolResult.error(UNKNOWN_TOOL, f'unknown tool "{call.name}"; available tools: {known}')
        arguments = entry.validator.parse(call.arguments)
        if isinstance(arguments, ToolResult):
            return arguments
        tool = entry.tool
        execution = ToolExecution(tool, call, arguments, context)
        gate = (
            self._registry._gates.setdefault(context.log, anyio.Lock()) if context.log is not None else None
        )
        async with gate if gate is not None else contextlib.nullcontext():
            decision = await self._ctx.waterfall(PRE_EXECUTE, Allow(), execution)
            if isinstance(decision, Deny):
                return ToolResult.error(DENIED, denial_text(decision.reason))
            reason = decision.reason if isinstance(decision, Ask) else None
            if reason is None and tool.approval is not None:
                reason = tool.approval(arguments, context)
            if isinstance(decision, Ask) or reason is not None:
                approval = await self._approve(ApprovalRequest(tool.name, call.id, reason, context))
                if not approval.granted:
                    return ToolResult.error(REJECTED, rejection_text(tool.name, approval))
                context = replace(context, approved=True)
                execution = ToolExecution(tool, call, arguments, context)
        execute = await self._ctx.waterfall(EXECUTOR, tool.execute, tool, call, context)
        try:
            result = await execute(arguments, context)
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as error:
            # Contained by design: a tool's bug is the model's information, not the loop's crash.
            return ToolResult.error(
                TOOL_FAILED, f'tool "{call.name}" failed: {type(error).__name__}: {error}'
            )
        done = ToolResult(result) if isinstance(result, str) else result
        return await self._ctx.waterfall(POST_EXECUTE, done, execution)

    async def _approve(self, request: ApprovalRequest) -> Approval:
        """The `approval` service's decision; with no such service loaded, nobody can grant it (`unavailable`)."""
        if not self._ctx.has(APPROVER):
            return Approval("unavailable")
        return await self._ctx.get(APPROVER).request(request)


TOOLS = ServiceKey[ToolView]("tools")


def tool_set(registry: ToolRegistry, home: Context, context: AssembleContext) -> ToolSet:
    """The tools visible to the assembly's scope, as the prompt's tool provider returns them (in name order)."""
    return ToolSet(registry.schemas(context.ctx.scope if context.ctx is not None else home.scope))


def _apply(ctx: Context, config: NoConfig) -> None:
    registry = ToolRegistry()
    ctx.provide(TOOLS, registry)
    ctx.provide(TOOL_ENV, ToolEnvironment())
    # Withholding secrets from a command's environment is moot if it can read dsh's own: while tools can run, a
    # same-user process cannot open /proc/<dsh>/environ or /proc/<dsh>/mem.
    previous = undumpable()
    ctx.effect(lambda: restore_dumpable(previous))
    if ctx.has(SYSTEM_PROMPT):
        # The registry is the prompt's tool provider: what an agent may call is what its request lists.
        ctx.get(SYSTEM_PROMPT).tools(lambda context: tool_set(registry, ctx, context))


plugin = Plugin(
    name="tools",
    apply=_apply,
    provides=(TOOLS, TOOL_ENV),
    description="the tool registry and the environment policy of tool subprocesses; when the system prompt is "
    "loaded first, also its tool provider",
)
