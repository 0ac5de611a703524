"""Recorded tools: in a replay, a tool that cannot run in CI (it reaches the network or another outside service) is
not executed; each of its calls is served the recording's `tool/result` for the same call. The call is matched by
the recorded log its session is bound to, its turn, its step and its position among the step's calls, and checked
against the recorded tool name and arguments; a mismatch is a `ReplayMismatch` naming both, kept by the replay
adapter (so `assert_consumed` raises it) and returned to the loop as the call's error result.

Which tools are recorded: `modes` (a scenario's `tools:`) names a tool `live` or `recorded`; a tool it does not name
is recorded when its definition declares itself non-hermetic (`dsh.runtime.tools.Tool.hermetic`, False for web_fetch and
web_search), live otherwise. A live tool that declares itself `timing_dependent` (the job tools: what
`job_output` reads depends on how far a background job has got) is run, for what it does (a kill kills, a read moves
the read position on, a wait waits for the live job), and the model is served the recorded result: recorded order
decides what each read returned, never the scheduler, so every re-run logs the same bytes. The alternative, holding
each read until the live job reaches the state the recording saw, cannot pin a stream read (a command's output
arrives in chunks of whatever size the pipe delivers) and would make a read of a job that ran further than recorded
unanswerable. The loop has no replay branch: the replay plugin listens to the tool registry's `tools/executor`
waterfall and hands back the recorded executor.

MCP servers (dsh.plugins.mcp) are recorded the same way: their tools are not hermetic, and a server none of whose
tools the scenario names `live` is not started at all: the plugin's `mcp/connect` waterfall is answered with a
server that offers the tools the recording called, so a scenario replays with no server installed and no key set."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, NoReturn

import anyio

from dsh.plugins.mcp import CONNECT, Connector, LinkError, ListedTool, ServerRef, tool_prefix
from dsh.runtime.kernel import Context
from dsh.runtime.llm import ImageBlock, TextBlock, ToolCallBlock, ToolResultBlock
from dsh.runtime.session import ToolCall, ToolCallData, ToolResultData, ToolResultEvent
from dsh.runtime.tools import EXECUTOR, Tool, ToolContext, ToolResult
from dsh.runtime.tools.definition import Execute

from ..recordings._errors import ReplayMismatch
from ..recordings._placeholders import CWD_PLACEHOLDER
from ..recordings._source import RecordedLog
from ..script._edits import Edit, apply_edits, recorded_edits
from ._adapter import ReplayAdapter

__all__ = ["ToolMode", "RecordedTools", "recorded_servers", "serve_recorded_tools"]

ToolMode = Literal["live", "recorded"]


@dataclass
class _Tape:
    """One recorded log's tool calls by (turn, step), in call order, and their results by (turn, step, call id)."""

    calls: dict[tuple[int, int], list[ToolCallData]] = field(default_factory=dict)
    results: dict[tuple[int, int, str], ToolResultData] = field(default_factory=dict)
    edits: dict[tuple[int, int, str], list[Edit]] = field(default_factory=dict)


def _tape(log: RecordedLog) -> _Tape:
    tape = _Tape()
    for event, _ in log.events():
        if event.seq < log.info.seed_length:  # inherited by a fork: its calls are not re-run in this session
            continue
        view = event.view()
        if isinstance(view, ToolCall):
            call = view.data
            tape.calls.setdefault((call.turn, call.step), []).append(call)
        elif isinstance(view, ToolResultEvent):
            result = view.data
            for block in result.message.content:
                if isinstance(block, ToolResultBlock):
                    tape.results[(result.turn, result.step, block.tool_call_id)] = result
    tape.edits = recorded_edits(log)
    return tape


def _canonical(arguments: str, cwd: str | None) -> str:
    text = arguments if cwd is None else arguments.replace(cwd, CWD_PLACEHOLDER)
    try:
        return json.dumps(json.loads(text), sort_keys=True, ensure_ascii=False)
    except ValueError:
        return text  # not JSON: compared as written


def _with_cwd(value: Any, cwd: str) -> Any:
    if value is None:
        return None
    return json.loads(json.dumps(value).replace(CWD_PLACEHOLDER, cwd))


class RecordedTools:
    """Decides, per call, whether a tool runs or is served from the recording the replay adapter serves."""

    def __init__(self, adapter: ReplayAdapter, modes: Mapping[str, ToolMode]) -> None:
        self._adapter = adapter
        self._modes = dict(modes)
        self._logs = {log.info.name: log for log in adapter.recording.logs}
        self._tapes: dict[str, _Tape] = {}

    def mode(self, tool: Tool) -> ToolMode:
        """`tools:` names it, else recorded exactly when the tool is not hermetic."""
        return self._modes.get(tool.name, "live" if tool.hermetic else "recorded")

    async def executor(
        self, execute: Execute, tool: Tool, call: ToolCallBlock, context: ToolContext, next_: Any
    ) -> Any:
        """The `tools/executor` listener: the tool's own executor for a live tool, the recording's for the rest;
        either way followed by the context edits the recording logged while that call ran (replay/script/_edits.py)."""
        chosen: Execute
        if self.mode(tool) == "live":
            live = await next_(execute)
            if not tool.timing_dependent or tool.name in self._modes:
                chosen = live
            else:

                async def witnessed(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
                    await live(
                        arguments, context
                    )  # what it does happens; what it says comes from the recording
                    return self.serve(tool, call, context)

                chosen = witnessed
        else:

            async def recorded(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
                return self.serve(tool, call, context)

            chosen = recorded

        async def then_edits(arguments: dict[str, Any], context: ToolContext) -> ToolResult | str:
            result = await chosen(arguments, context)
            edits = self._edits(context)
            if edits:
                problem = await apply_edits(edits, context)
                if problem is not None:
                    self._adapter.report(problem)
            return result

        return then_edits

    def _edits(self, context: ToolContext) -> list[Edit]:
        """The edits the bound recording logged while the call at this call's place ran."""
        if context.log is None or context.agent is None:
            return []
        name = self._adapter.bindings().get(context.log.info.id)
        if name is None or name not in self._logs:
            return []
        tape = self._tapes.get(name)
        if tape is None:
            tape = self._tapes[name] = _tape(self._logs[name])
        if not tape.edits:
            return []
        calls = tape.calls.get((context.turn, context.step), [])
        position = self._position(context)
        if position >= len(calls):
            return []
        return tape.edits.get((context.turn, context.step, calls[position].call_id), [])

    def _mismatch(
        self, message: str, *, session: str | None, log: str | None, recorded: str, asked: str
    ) -> NoReturn:
        error = ReplayMismatch(
            f"recorded tool mismatch: {message}",
            session_id=session,
            log=log,
            call=None,
            recorded=recorded,
            asked=asked,
        )
        self._adapter.report(error)
        raise error

    def serve(self, tool: Tool, call: ToolCallBlock, context: ToolContext) -> ToolResult:
        """The recorded result of `call`; raises (and reports) `ReplayMismatch` when the recording holds none."""
        cwd = str(context.cwd)
        where = f"turn {context.turn} step {context.step}"
        asked = f"{call.name} {_canonical(call.arguments, cwd)}"
        if context.log is None:
            self._mismatch(
                f"{tool.name} is recorded, and its call {call.id} was made outside a session",
                session=None,
                log=None,
                recorded="(no session)",
                asked=asked,
            )
        session = context.log.info.id
        name = self._adapter.bindings().get(session)
        if name is None or name not in self._logs:
            self._mismatch(
                f"live session {session!r} called the recorded tool {tool.name} before making a model call, so it "
                "is bound to no recorded log",
                session=session,
                log=None,
                recorded="(no recorded log)",
                asked=asked,
            )
        tape = self._tapes.get(name)
        if tape is None:
            tape = self._tapes[name] = _tape(self._logs[name])
        position = self._position(context)
        calls = tape.calls.get((context.turn, context.step), [])
        place = f"{where} call {position + 1}"
        if position >= len(calls):
            self._mismatch(
                f"at {place} the replay called {asked}; the recording {name} made only {len(calls)} tool "
                f"call{'' if len(calls) == 1 else 's'} in {where}",
                session=session,
                log=name,
                recorded=f"{len(calls)} calls in {where}",
                asked=asked,
            )
        recorded_call = calls[position]
        recorded = f"{recorded_call.name} {_canonical(recorded_call.arguments, None)}"
        if recorded != asked:
            self._mismatch(
                f"at {place} the recording {name} called {recorded}; the replay called {asked}",
                session=session,
                log=name,
                recorded=recorded,
                asked=asked,
            )
        result = tape.results.get((context.turn, context.step, recorded_call.call_id))
        if result is None:
            self._mismatch(
                f"at {place} the recording {name} holds no tool/result for {recorded_call.call_id} ({recorded})",
                session=session,
                log=name,
                recorded=f"{recorded} with no result",
                asked=asked,
            )
        return self._result(
            result, recorded_call.call_id, cwd, place=place, log=name, session=session, asked=asked
        )

    def _result(
        self,
        result: ToolResultData,
        call_id: str,
        cwd: str,
        *,
        place: str,
        log: str,
        session: str,
        asked: str,
    ) -> ToolResult:
        block = next(
            b for b in result.message.content if isinstance(b, ToolResultBlock) and b.tool_call_id == call_id
        )
        parts = block.content
        first, images = (parts[0], parts[1:]) if parts else (None, ())
        text = first.text if isinstance(first, TextBlock) else None
        if text is None or not all(isinstance(p, ImageBlock) for p in images):
            kinds = [type(p).__name__ for p in parts]
            self._mismatch(
                f"at {place} the recorded result in {log} is not one text block followed by images ({kinds}), "
                "which is what a tool returns",
                session=session,
                log=log,
                recorded=f"{len(parts)} content blocks",
                asked=asked,
            )
        meta = _with_cwd(result.meta, cwd)
        return ToolResult(
            text.replace(CWD_PLACEHOLDER, cwd),
            is_error=block.is_error,
            code=None if result.error is None else result.error.code,
            meta=meta if isinstance(meta, dict) else {},
            images=tuple(p for p in images if isinstance(p, ImageBlock)),
        )

    @staticmethod
    def _position(context: ToolContext) -> int:
        """The call's position among its step's calls, as the live log holds them (they are logged, and flushed,
        before any of them runs)."""
        assert context.log is not None
        info = context.log.info
        ids = []
        for event in context.log.store.events(info.id, start=info.seed_length or 0, types=(ToolCall,)):
            data = event.view().data
            assert isinstance(data, ToolCallData)
            if data.turn == context.turn and data.step == context.step:
                ids.append(data.call_id)
        return ids.index(context.call_id)


class _RecordedServer:
    """An MCP server as a recording knows it: the tools the recording called (no schema beyond an object: the
    recorded model's arguments are whatever it wrote), each call served from the recording by the executor."""

    def __init__(self, server: str, tools: Sequence[ListedTool]) -> None:
        self.server = server
        self._tools = list(tools)
        self.closed = anyio.Event()

    async def tools(self) -> Sequence[ListedTool]:
        return self._tools

    async def call(self, raw: str, arguments: dict[str, Any], limit_s: float) -> ToolResult:
        raise LinkError(
            f"is served from the recording; its tool {raw} runs only when the scenario names it live",
            lost=False,
        )

    def diagnosis(self) -> str:
        return ""


def recorded_servers(adapter: ReplayAdapter, modes: Mapping[str, ToolMode]) -> Callable[..., Any]:
    """The `mcp/connect` listener: a server none of whose tools `modes` names `live` is not started; its tools are
    the ones the recording called (so a scenario replays with no server installed)."""

    async def connect(connector: Connector, server: ServerRef, next_: Any) -> Connector:
        prefix = tool_prefix(server.name)
        if any(name.startswith(prefix) and mode == "live" for name, mode in modes.items()):
            live: Connector = await next_(connector)
            return live
        names: dict[str, None] = {}
        for log in adapter.recording.logs:
            for event, _ in log.events():
                view = event.view()
                if isinstance(view, ToolCall) and view.data.name.startswith(prefix):
                    names[view.data.name] = None
        tools = [
            ListedTool(
                name=name,
                raw=name[len(prefix) :],
                description=f"MCP server {server.name}'s tool, served from the recording",
                parameters={"type": "object"},
            )
            for name in names
        ]

        @asynccontextmanager
        async def recorded(
            ref: ServerRef, on_tools_changed: Callable[[], None]
        ) -> AsyncIterator[_RecordedServer]:
            yield _RecordedServer(ref.name, tools)

        return recorded

    return connect


def serve_recorded_tools(
    ctx: Context, adapter: ReplayAdapter, modes: Mapping[str, ToolMode]
) -> RecordedTools:
    """Serve the recorded tools of `adapter`'s recording in `ctx` (undone when the plugin that called it unloads)."""
    tools = RecordedTools(adapter, modes)
    ctx.on(EXECUTOR, tools.executor)
    ctx.on(CONNECT, recorded_servers(adapter, modes))
    return tools
