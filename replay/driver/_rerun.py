"""Re-running a recording: the recorded user messages are the inputs of each turn, the replay adapter serves the
recorded model calls, the tools run live in a fresh copy of the workspace, and the replayed log's skeleton is
compared with the recording's. The same driver records: with the live transport, it writes the log it made.

Time and ids come from a deterministic clock and id minter, and the workspace path is written as `{{cwd}}`, so the
replayed log and what the user saw are the same on every run (goldens need no scrubbing)."""

from __future__ import annotations

import io
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import AsyncExitStack, ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
import msgspec
from rich.console import Console

from dsh.plugins.interaction import INTERACTION
from dsh.runtime.agent import AGENTS, EVENT, Agent, AgentEvent, AgentOptions
from dsh.runtime.host import TerminalView, hosted
from dsh.runtime.kernel import Context, Deployment
from dsh.runtime.llm import TextBlock, UserBlock
from dsh.runtime.session import (
    AssistantMessageEvent,
    CountingIds,
    FixedClock,
    RequestHeader,
    SessionEndSeed,
    SessionInfo,
    SessionStore,
    SessionStoreProtocol,
    StoredEvent,
    TurnEnd,
    write_jsonl,
)

from ..recordings._errors import RecordingFailed, ReplayMismatch, ScriptError
from ..recordings._placeholders import CWD_PLACEHOLDER
from ..recordings._replayed import ToolCallRecord, final_text, log_events, tool_calls
from ..recordings._source import read_log
from ..script._instructions import instruction_divergence, instruction_messages
from ..script._recording import Recording, child_logs, load_recording
from ..script._script import Hang, recorded_turns
from ..script._skeleton import first_divergence, skeleton
from ._authored import SCRIPTED, load_replies
from ._hitl import RecordedCommand, recorded_commands
from ._inputs import Action, Leave, Resume, Run, Steer, Woken, plan_of_doc, plan_of_log, plan_of_turns
from ._plugin import HELD_INPUT, REPLAY
from ._prompts import gone_tools, offered_tools, recorded_tools, unseen_tools
from ._routes import missing_key
from ._scenario import Scenario, live_deployment, replay_deployment, scripted_deployment

__all__ = ["CLOCK_START", "Rerun", "golden_jsonl", "record", "rerun"]

CLOCK_START = 1_700_000_000_000
"""The deterministic clock's first reading (epoch ms); it then advances 1 ms per reading."""

_POLL = 0.005
_WOKEN_WAIT_S = 60.0


@dataclass(frozen=True)
class Rerun:
    """What a re-run produced: the skeletons compared (the primary log first, then each child), the first divergence
    (None: the replay matches), the replayed sessions as JSONL with the workspace written `{{cwd}}`, and what the
    user saw (the terminal view, plain text)."""

    scenario: Scenario
    recorded: list[list[str]]
    replayed: list[list[str]]
    divergence: str | None
    logs: list[tuple[SessionInfo, bytes]]
    view: str
    unseen_tools: tuple[str, ...] = ()
    """Tools the deployment offered that the recording never saw (see replay/driver/_prompts.py)."""

    # what the primary session did, for hand-written tests (see replay/recordings/_replayed.py)
    @property
    def events(self) -> list[StoredEvent]:
        """The primary session's replayed events (the workspace written `{{cwd}}`)."""
        return log_events(self.logs[0][1]) if self.logs else []

    @property
    def tool_calls(self) -> list[ToolCallRecord]:
        """The primary session's tool calls, each with its arguments and result."""
        return tool_calls(self.events)

    @property
    def text(self) -> str | None:
        """The assistant's final text in the primary session."""
        return final_text(self.events)


def _normalise(data: bytes, cwd: str) -> bytes:
    return data.replace(cwd.encode(), CWD_PLACEHOLDER.encode())


def _prompt(blocks: tuple[UserBlock, ...], cwd: str) -> tuple[UserBlock, ...]:
    return tuple(
        TextBlock(block.text.replace(CWD_PLACEHOLDER, cwd)) if isinstance(block, TextBlock) else block
        for block in blocks
    )


@dataclass(frozen=True)
class _Recorded:
    """What the driver takes from a recording besides its script, read in one walk: each turn's user input, the
    provider and model of its first request header, and the turns before which it was closed and resumed (a
    `session/end-seed` after a `turn/end`)."""

    turns: list[tuple[int, tuple[UserBlock, ...]]]
    provider: str | None
    model: str | None
    resumes: set[int]


def _recorded(log_path: Path) -> _Recorded:
    log = read_log(log_path)
    provider = model = None
    resumes: set[int] = set()
    last_turn, header_seen, ended = 0, False, False
    for event, _ in log.events():
        if event.type not in (TurnEnd.TAG, SessionEndSeed.TAG, RequestHeader.TAG):
            continue
        view = event.view()  # decoded once, through the log's event table
        if isinstance(view, TurnEnd):
            last_turn, ended = view.data.turn, True
        elif isinstance(view, SessionEndSeed) and ended:
            resumes.add(last_turn + 1)
        elif isinstance(view, RequestHeader) and not header_seen:
            config = view.data.header.config
            provider, model, header_seen = config.provider, config.model, True
    turns = [(t.turn, tuple(block for m in t.inputs for block in m.content)) for t in recorded_turns(log)]
    return _Recorded(turns, provider, model, resumes)


_WORKSPACE_TIME_NS = CLOCK_START * 1_000_000
"""Every copied workspace file's mtime: a checkout's times are when git wrote each file, and the file tools order
by mtime (glob, newest first, then by path), so a recorded order must not depend on them."""


def _settle_times(workspace: Path) -> None:
    for path in sorted(workspace.rglob("*"), reverse=True):  # children before the directories holding them
        os.utime(path, ns=(_WORKSPACE_TIME_NS, _WORKSPACE_TIME_NS), follow_symlinks=False)


@contextmanager
def _workspace(scenario: Scenario, override: Path | None) -> Iterator[tuple[Path, SessionStore]]:
    with tempfile.TemporaryDirectory(prefix="dsh-replay-") as scratch:
        root = Path(scratch).resolve()
        workspace = root / "workspace"
        source = override or scenario.workspace
        if source is not None:
            shutil.copytree(source, workspace, symlinks=True)
            _settle_times(workspace)
        else:
            workspace.mkdir()
        # a scratch store: it is removed when the run ends, so commits need not reach the disk
        store = SessionStore(
            root / "sessions.db", clock=FixedClock(CLOCK_START, 1), ids=CountingIds(), synchronous="OFF"
        )
        with store:
            yield workspace, store


async def _cancel_when_ready(ready: list[Path], scope: anyio.CancelScope) -> None:
    # the ready file is the hang override's only signal (a file, so a driver in another process can use it too)
    while not any(path.exists() for path in ready):  # noqa: ASYNC110
        await anyio.sleep(_POLL)
    scope.cancel()


async def _drive(
    scenario: Scenario,
    deployment: Deployment,
    *,
    workspace: Path,
    store: SessionStoreProtocol,
    recording: Recording | None,
    order: Sequence[str] = (),
    echo: Console | None = None,
    kept: list[str] | None = None,
) -> tuple[list[SessionInfo], str]:
    """Run the scenario's turns in one agent; return the sessions it made and the view. The sessions come in the
    order of the recorded logs they were bound to (`order`, by log name), then any others by creation. A scripted
    model's replies that do not match the calls made raise, or are added to `kept` when it is given."""
    lifecycle = ExitStack()
    ctx = lifecycle.enter_context(hosted(deployment, store)).ctx
    out = io.StringIO()
    view_console = Console(file=out, width=100, color_system=None, force_terminal=False, soft_wrap=True)
    view = TerminalView(view_console)
    ctx.on(EVENT, view.on_event)
    if echo is not None:
        err = Console(stderr=True, soft_wrap=True) if echo.file is sys.stdout else echo
        ctx.on(EVENT, TerminalView(echo, err=err).on_event)
    try:
        recorded = _recorded(scenario.log) if recording is not None else None
        provider = recorded.provider if recorded is not None else None
        model = recorded.model if recorded is not None else None
        options = AgentOptions(
            provider=scenario.doc.provider or provider or deployment.provider or "scripted",
            model=scenario.doc.model or model or deployment.model or "scripted",
            cwd=workspace,
        )
        resumes = set(scenario.doc.resume_before)
        if recorded is not None and not scenario.doc.resume_before:
            resumes = recorded.resumes
        plan: list[Action] | None = None
        if recording is not None and scenario.doc.inputs is None:  # the inputs as recorded
            log = read_log(scenario.log)
            plan = plan_of_log(log, resumes) or plan_of_turns(log, resumes)
        if plan is None:
            plan = plan_of_doc(scenario, resumes)
        commands = recorded_commands(read_log(scenario.log)) if recording is not None else []
        await _run_plan(ctx, plan, options, scenario, workspace, recording, commands)
        bindings: dict[str | None, str] = {}
        if ctx.has(REPLAY):
            adapter = ctx.get(REPLAY)
            adapter.assert_consumed()
            bindings = adapter.bindings()
        if ctx.has(HELD_INPUT):
            ctx.get(HELD_INPUT).assert_consumed()
        if ctx.has(SCRIPTED):
            try:
                ctx.get(SCRIPTED).assert_consumed()
            except ReplayMismatch as problem:
                if kept is None:
                    raise
                kept.append(str(problem))
        return _in_recorded_order(store.sessions(), bindings, order), out.getvalue()
    finally:
        lifecycle.close()


async def _run_plan(
    ctx: Context,
    plan: list[Action],
    options: AgentOptions,
    scenario: Scenario,
    workspace: Path,
    recording: Recording | None,
    commands: Sequence[RecordedCommand] = (),
) -> None:
    """Feed the primary agent its plan (see `dsh.replay.driver._inputs`): turns run or awaited, steering queued (a scenario's
    at its step; a recording's through the inbox gate, which admits it where it was logged), resumes, and the slash
    commands the recording ran between turns, each before the turn it preceded."""
    agents = ctx.get(AGENTS)
    problems: list[ReplayMismatch] = []
    timed: dict[tuple[int, int], list[tuple[UserBlock, ...]]] = {}
    current: list[Agent] = []

    async def steer(agent: Agent, blocks: tuple[UserBlock, ...]) -> None:
        try:
            await agent.queue(_prompt(blocks, str(workspace)), target="next-step")
        except ReplayMismatch as mismatch:  # raised after the plan, as the run's first problem
            problems.append(mismatch)

    async def steer_at_step(event: AgentEvent) -> None:
        stored = event.event
        if not current or event.agent is not current[-1] or stored.type != AssistantMessageEvent.TAG:
            return
        view = stored.view()
        data = view.data
        turn, step = getattr(data, "turn", None), getattr(data, "step", None)
        if turn is None or step is None:
            return
        for blocks in timed.pop((turn, step), []):
            if held:  # a replay's gate holds it until its recorded place, which this turn has yet to reach
                groups[-1].start_soon(steer, event.agent, blocks)
            else:
                await event.agent.queue(_prompt(blocks, str(workspace)), target="next-step")

    held = ctx.has(HELD_INPUT)
    groups: list[anyio.abc.TaskGroup] = []
    ctx.on(EVENT, steer_at_step)
    async with AsyncExitStack() as stack:

        async def open_agent(resume: str | None) -> tuple[Agent, anyio.abc.TaskGroup]:
            made = agents.create(options) if resume is None else agents.resume(resume, options)
            agent = await stack.enter_async_context(made)
            group = await stack.enter_async_context(anyio.create_task_group())
            current.append(agent)
            groups.append(group)
            return agent, group

        agent, steering = await open_agent(None)

        async def run_commands(before: int | None) -> None:
            for command in commands:
                if command.before == before:
                    await _run_command(ctx, agent, command, scenario)

        for action in plan:
            if isinstance(action, Run | Woken):
                await run_commands(action.turn)
            if isinstance(action, Resume):
                steering.cancel_scope.cancel()
                session = agent.id
                await stack.aclose()
                agent, steering = await open_agent(session)
            elif isinstance(action, Leave):
                await agent.queue(_prompt(action.blocks, str(workspace)), wake=False)
            elif isinstance(action, Steer):
                if action.step is not None:
                    timed.setdefault((action.turn, action.step), []).append(action.blocks)
                else:
                    steering.start_soon(steer, agent, action.blocks)
            elif isinstance(action, Woken):
                with anyio.move_on_after(_WOKEN_WAIT_S):
                    await agent.wait_turn_end(action.turn)
                if not (agent.log.state.last_turn >= action.turn and agent.log.state.open_turn is None):
                    raise ScriptError(
                        f"turn {action.turn} starts from the agent's inbox (no user prompt opens it), and nothing "
                        f"started it within {_WOKEN_WAIT_S:g} s",
                        place=str(scenario.log),
                    )
            else:
                await _run_turn(agent, action, workspace, recording)
        await run_commands(None)
        steering.cancel_scope.cancel()
    if problems:
        raise problems[0]


async def _run_command(ctx: Context, agent: Agent, command: RecordedCommand, scenario: Scenario) -> None:
    """Run a recorded slash command again through the interaction service (the deployment must load it)."""
    if not ctx.has(INTERACTION):
        raise ScriptError(
            f"the recording runs /{command.name}, a command of the interaction plugin, which the deployment does not "
            "load; add `use: interaction` to it",
            place=str(scenario.log),
        )
    await ctx.get(INTERACTION).command(agent, command.name, command.args)


async def _run_turn(agent: Agent, action: Run, workspace: Path, recording: Recording | None) -> None:
    """Run one planned turn; a recorded hang is cancelled once its ready file appears."""
    hangs = (
        []
        if recording is None
        else [
            workspace / entry.end.ready_file
            for entry in recording.root.entries
            if entry.call.turn == action.turn and isinstance(entry.end, Hang) and entry.end.ready_file
        ]
    )
    async with anyio.create_task_group() as group:
        if hangs:
            group.start_soon(_cancel_when_ready, hangs, group.cancel_scope)

        async def turn() -> None:
            await agent.run(_prompt(action.blocks, str(workspace)))
            group.cancel_scope.cancel()

        group.start_soon(turn)


def _in_recorded_order(
    sessions: list[SessionInfo], bindings: dict[str | None, str], order: Sequence[str]
) -> list[SessionInfo]:
    """`sessions` paired with the recorded logs: each one that the replay adapter bound to a recorded log at that
    log's place in `order`, the rest after them by creation. Concurrent siblings are created, and so numbered, in
    whatever order they were scheduled; what ties a replayed child to its recording is the binding (by
    `spawned_by`), so that, not creation order, decides which recorded skeleton it is compared with."""
    place = {name: index for index, name in enumerate(order)}

    def key(info: SessionInfo) -> tuple[int, int, str]:
        bound = bindings.get(info.id)
        return (place.get(bound, len(order)) if bound is not None else len(order), info.created_at, info.id)

    return sorted(sessions, key=key)


def _logs(
    store: SessionStoreProtocol, sessions: list[SessionInfo], cwd: str
) -> list[tuple[SessionInfo, bytes]]:
    return [(info, _normalise(b"".join(write_jsonl(info, store.events(info.id))), cwd)) for info in sessions]


async def rerun(
    source: Scenario,
    *,
    workspace: Path | None = None,
    pace_ms: float = 0.0,
    echo: Console | None = None,
    wire: bool = False,
) -> Rerun:
    """Replay `source` through the real loop and compare its skeleton with the recording's (see the module); with
    `wire`, through the deployment's real model adapter (replay/driver/_wire.py)."""
    recording = load_recording(source.directory or source.log)
    recorded_logs = [read_log(source.log), *(read_log(p) for p in _children(source))]
    deployment = replay_deployment(source, pace_ms=pace_ms, wire=wire)
    with _workspace(source, workspace) as (live, store):
        try:
            sessions, view = await _drive(
                source,
                deployment,
                workspace=live,
                store=store,
                recording=recording,
                order=[log.info.name for log in recorded_logs],
                echo=echo,
            )
        except ReplayMismatch as mismatch:
            sessions, view = sorted(store.sessions(), key=lambda i: (i.created_at, i.id)), ""
            problem: str | None = str(mismatch)
        else:
            problem = None
        cwd = str(live)
        replayed = [skeleton(store.events(info.id), seed=info.seed_length or 0, cwd=cwd) for info in sessions]
        told = [instruction_messages(store.events(info.id), seed=info.seed_length or 0) for info in sessions]
        logs = _logs(store, sessions, cwd)
        view = view.replace(cwd, CWD_PLACEHOLDER)
    recorded = [
        skeleton((event for event, _ in log.events()), seed=log.info.seed_length) for log in recorded_logs
    ]
    offered = offered_tools([log for _, log in logs])
    divergence = gone_tools(recording, offered) or problem
    if divergence is None:
        for index in range(max(len(recorded), len(replayed))):
            found = first_divergence(
                recorded[index] if index < len(recorded) else [],
                replayed[index] if index < len(replayed) else [],
            )
            if found is not None:
                which = "the primary session" if index == 0 else f"child session {index}"
                divergence = f"{which}: {found}"
                break
    if divergence is None:
        for index, log in enumerate(recorded_logs[: len(told)]):
            found = instruction_divergence(
                instruction_messages((event for event, _ in log.events()), seed=log.info.seed_length),
                told[index],
                cwd=cwd,
            )
            if found is not None:
                which = "the primary session" if index == 0 else f"child session {index}"
                divergence = f"{which}: {found}"
                break
    unseen = unseen_tools(recorded_tools(recorded_logs), offered)
    return Rerun(source, recorded, replayed, divergence, logs, view, unseen)


def _children(scenario: Scenario) -> list[Path]:
    if scenario.directory is None:
        return []
    return child_logs(scenario.directory)


async def record(
    scenario: Scenario,
    *,
    workspace: Path | None = None,
    replies: Path | None = None,
    echo: Console | None = None,
) -> list[tuple[SessionInfo, bytes]]:
    """Run the scenario's inputs against its live deployment (or, with `replies`, a hand-written model) and return
    the logs made (the primary first), with the workspace written `{{cwd}}`; `echo` shows the turns as `dsh run`
    does. A turn that ended in error (but for an `error:` reply of `replies`, which asks for it), or replies that do
    not match the model calls made, raise `RecordingFailed` holding the logs: a failed turn never becomes a scenario
    whose goldens pass."""
    if scenario.doc.inputs is None:
        raise ScriptError(
            "recording needs the user inputs: list them under `inputs:` in scenario.yml",
            place=str(scenario.directory or scenario.log),
        )
    if replies is None and (missing := missing_key(scenario)) is not None:
        raise ScriptError(
            f"cannot record against the live model: {missing}; set it, or serve hand-written replies "
            "(dsh record --script replies.yml)",
            place=str(scenario.directory or scenario.log),
        )
    deployment = live_deployment(scenario) if replies is None else scripted_deployment(scenario, replies)
    problems: list[str] = []
    with _workspace(scenario, workspace) as (live, store):
        sessions, _ = await _drive(
            scenario, deployment, workspace=live, store=store, recording=None, echo=echo, kept=problems
        )
        logs = _logs(store, sessions, str(live))
    asked = {reply.error.code for reply in load_replies(replies) if reply.error} if replies else set()
    problems = [*_failed_turns(logs, asked), *problems]
    if problems:
        raise RecordingFailed(str(scenario.directory or scenario.log), problems, list(logs))
    return logs


def _failed_turns(logs: Sequence[tuple[SessionInfo, bytes]], asked: set[str]) -> list[str]:
    """Each turn of `logs` that ended in error, as `turn N of LOG failed: MESSAGE [CODE]` (an error whose code a
    scripted reply asked for is not a failure)."""
    failed = []
    for number, (_, data) in enumerate(logs):
        name = "session.jsonl" if number == 0 else f"session.{number}.jsonl"
        for event in log_events(data):
            view = event.view()
            if not isinstance(view, TurnEnd):
                continue
            end = view.data
            error = end.reason.error
            if end.reason.kind == "error" and (error is None or error.code not in asked):
                code, message = (error.code, error.message) if error is not None else (None, None)
                failed.append(f"turn {end.turn} of {name} failed: {message} [{code}]")
    return failed


_HEADER_LINE = re.compile(rb'^\{"type":"request/header"')


def golden_jsonl(log: bytes) -> str:
    """A replayed log as a golden holds it: `request/header` system and tools reduced to `{{system}}`/`{{tools}}`,
    so a prompt edit changes the prompt golden only, never a behaviour golden."""
    lines = []
    for line in log.splitlines():
        if _HEADER_LINE.match(line):
            event = msgspec.json.decode(line)
            header = event["data"]["header"]
            if "system" in header:
                header["system"] = "{{system}}"
            if "tools" in header:
                header["tools"] = "{{tools}}"
            line = msgspec.json.encode(event)
        lines.append(line.decode())
    return "\n".join(lines) + "\n"
