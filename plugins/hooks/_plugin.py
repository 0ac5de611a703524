"""The `hooks` plugin: Claude Code's and Codex's `hooks.json` files, found at user, workspace and deployment level,
run at dsh's seams as the original's bridges run them. PreToolUse on `tools/pre-execute` (deny/block: the call never
runs and the model gets `Error: <reason>`; Claude Code's `ask`: an approval), PostToolUse on `tools/post-execute`
(block: the result becomes the reason; additional context: a message for the next step), UserPromptSubmit on
`agent/prompt-submit` (block: the turn ends blocked; context follows the prompt) and Stop on `agent/turn-stopping`
(block: the reason is steering, and the turn goes on). Each of those runs is logged `hook/invoked` then
`hook/result`. Outside a turn nothing is logged, as in the original: SessionStart (matcher subject: the source,
`startup`/`resume`/`fork`) and Claude Code's SubagentStart (subject `general-purpose`) run when an agent opens, and
their context joins the first prompt the agent takes in; SubagentStop runs, observe-only, when a child is closed.

How the dialects differ (the original's): Claude Code gets its payload with a trailing newline and
`CLAUDE_PROJECT_DIR` in its environment, and its `ask` and `allow` are honoured; Codex gets snake_case payloads with
`model`, `permission_mode` and `turn_id`, no trailing newline, its `tool_input` is `{command}`, only its blocking
decisions count, and on UserPromptSubmit plain stdout is context."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import msgspec

from dsh.runtime.agent import (
    PROMPT_SUBMIT,
    SESSION_END,
    SESSION_START,
    TURN_STOPPING,
    AddContext,
    BlockPrompt,
    PromptDecision,
    PromptSubmit,
    SessionClosing,
    SessionOpened,
    TurnStopping,
)
from dsh.runtime.kernel import Context, Plugin, ServiceKey, Waterfall
from dsh.runtime.llm import PluginSource, TextBlock
from dsh.runtime.session import HookInvoked, HookInvokedData, HookResult, HookResultData
from dsh.runtime.tools import (
    POST_EXECUTE,
    PRE_EXECUTE,
    TOOL_ENV,
    AddedContext,
    Ask,
    Deny,
    EnvPolicy,
    PreDecision,
    ToolEnvironment,
    ToolExecution,
    ToolResult,
)

from ._protocol import (
    CommandHook,
    HookConfigError,
    HookOutput,
    MatcherGroup,
    Merged,
    matches,
    merge,
    parse_config,
    parse_output,
    run_command,
    summarize,
)

__all__ = [
    "BLOCKED",
    "DIALECTS",
    "HOOKS",
    "HOOK_RUNS",
    "HookPoint",
    "Hooks",
    "HooksConfig",
    "ServedRun",
    "plugin",
]

BLOCKED = "BLOCKED"
"""The code of a tool result a PostToolUse hook blocked."""

DIALECTS = ("claude-code", "codex")
_PLUGIN_NAME = {"claude-code": "hooks-claude-code", "codex": "hooks-codex"}
_log = logging.getLogger("dsh.hooks")


@dataclass(frozen=True)
class HookPoint:
    """One point about to run its hooks: the dialect, the point, the matcher subject (a tool name, or ""), the turn,
    the agent, and what the run is anchored to (the tool call's id at PreToolUse/PostToolUse, the step at Stop)."""

    dialect: str
    point: str
    subject: str
    turn: int
    agent: Any
    anchor: str


@dataclass(frozen=True)
class ServedRun:
    """A hook run served instead of run: the matcher of its group and its outcome."""

    matcher: str | None
    output: HookOutput


HOOK_RUNS = Waterfall["list[ServedRun] | None", HookPoint]("hooks/runs")
"""Before a point runs the hooks its files configure: a listener returning runs serves them instead (each logged as
a run, its outcome applied); a replay under `hooks: recorded` serves the runs the recording logged at the same turn,
point and anchor. None: the configured hooks run."""


class HooksConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Where the hooks files are, per dialect, read in order and merged (`~` is the user's home; a relative path is
    in the session's workspace, read only with `project_config`): `claude_code` and `codex`. `project_config`:
    also run the hooks a workspace's own files configure (off by default: a repository's hooks run commands on the
    user's machine, outside any sandbox, so a workspace must be trusted before they run). `timeout_ms`: a hook's timeout when it sets no
    `timeout` of its own (the original's 10 minutes). `stderr_summary_max_chars`: the cap on `hook/result`'s
    `stderrSummary`. `model`: the model name Codex payloads carry. `env`: additions to the environment policy of
    hook processes (as bash's)."""

    claude_code: tuple[str, ...] = (
        "~/.claude/settings.json",
        ".claude/settings.json",
        ".claude/settings.local.json",
        "hooks.json",
    )
    codex: tuple[str, ...] = ("~/.codex/hooks.json", ".codex/hooks.json", "codex-hooks.json")
    project_config: bool = False
    timeout_ms: int = 600_000
    stderr_summary_max_chars: int = 500
    model: str = ""
    env_allow: tuple[str, ...] = ()
    env_deny: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.timeout_ms <= 0 or self.stderr_summary_max_chars <= 0:
            raise msgspec.ValidationError("`timeout_ms` and `stderr_summary_max_chars` must be positive")
        EnvPolicy(allow=self.env_allow, deny=self.env_deny)  # validates every entry


def _text(blocks: Any) -> str:
    return "".join(b.text for b in blocks if isinstance(b, TextBlock))


class Hooks:
    """Runs the hooks of a session's workspace at each point; counts handler ids per dialect, as the original."""

    def __init__(self, ctx: Context, config: HooksConfig, environment: ToolEnvironment) -> None:
        self._ctx = ctx
        self._config = config
        self._environment = environment
        self._policy = EnvPolicy(allow=config.env_allow, deny=config.env_deny)
        self._counters = dict.fromkeys(DIALECTS, 0)
        # one point's hooks at a time per agent: parallel calls run their hooks in call order (the order their
        # tasks reach the lock), so the log, and a re-run's, has them in one order
        self._locks: dict[str, anyio.Lock] = {}
        # what SessionStart/SubagentStart hooks added, per agent, until the agent's first prompt takes it in
        self._opening: dict[str, tuple[list[str], PluginSource]] = {}
        self._ignored: set[Path] = set()  # workspace files left unread (no project_config), each said once

    def groups(self, dialect: str, cwd: Path) -> dict[str, list[MatcherGroup]]:
        """The dialect's groups per point from every file found (user level first, then the workspace's)."""
        paths = self._config.claude_code if dialect == "claude-code" else self._config.codex
        merged: dict[str, list[MatcherGroup]] = {}
        for entry in paths:
            path = Path(entry).expanduser()
            in_workspace = not path.is_absolute()
            path = cwd / path if in_workspace else path
            if not path.is_file():
                continue
            if in_workspace and not self._config.project_config:
                if path not in self._ignored:
                    self._ignored.add(path)
                    _log.warning(
                        "hooks (%s): %s is not run: a workspace's own hooks need `project_config: true` in the "
                        "hooks plugin's config (trust the workspace first)",
                        dialect,
                        path,
                    )
                continue
            try:
                parsed = parse_config(json.loads(path.read_text(encoding="utf-8")), where=str(path))
            except (OSError, ValueError, HookConfigError) as error:
                # the original's handling: a file it cannot read registers nothing, and says so
                _log.warning(
                    "hooks (%s): could not load %s: %s; its hooks are not registered", dialect, path, error
                )
                continue
            for point, groups in parsed.items():
                merged.setdefault(point, []).extend(groups)
        return merged

    async def run_point(
        self,
        dialect: str,
        point: str,
        subject: str,
        payload: dict[str, Any],
        *,
        agent: Any,
        turn: int,
        anchor: str = "",
        logged: bool = True,
    ) -> Merged:
        """Run every hook of `dialect` at `point` whose matcher selects `subject`, in order, logging each (unless
        not `logged`); fold them. A `hooks/runs` listener may serve the runs instead."""
        lock = self._locks.setdefault(agent.id, anyio.Lock())
        async with lock:
            return await self._run_point(
                dialect, point, subject, payload, agent=agent, turn=turn, anchor=anchor, logged=logged
            )

    async def _run_point(
        self,
        dialect: str,
        point: str,
        subject: str,
        payload: dict[str, Any],
        *,
        agent: Any,
        turn: int,
        anchor: str,
        logged: bool,
    ) -> Merged:
        cwd = Path(agent.cwd) if agent is not None and agent.cwd is not None else Path.cwd()
        served = await self._ctx.waterfall(
            HOOK_RUNS, None, HookPoint(dialect, point, subject, turn, agent, anchor)
        )
        planned: list[tuple[str | None, CommandHook | HookOutput]]
        if served is not None:
            planned = [(run.matcher, run.output) for run in served]
        else:
            planned = [
                (group.matcher, hook)
                for group in self.groups(dialect, cwd).get(point, [])
                if matches(group.matcher, subject)
                for hook in group.hooks
            ]
        outputs: list[HookOutput] = []
        for matcher, hook in planned:
            self._counters[dialect] += 1
            handler = f"{dialect}:{point}:{self._counters[dialect]}"
            if logged:
                await agent.append(
                    HookInvoked(
                        data=HookInvokedData(
                            turn=turn, point=point, dialect=dialect, handler_id=handler, matcher=matcher
                        )
                    )
                )
            clock = agent.log.clock
            started = clock.now_ms()
            if isinstance(hook, HookOutput):
                output = hook
            else:
                output = await self._run(dialect, point, hook, payload, cwd)
                if dialect == "codex" and point in ("UserPromptSubmit", "SessionStart"):
                    plain = output.exit_code == 0 and output.stdout and not output.stdout.startswith("{")
                    if plain and output.additional_context is None:
                        output.additional_context = output.stdout
            outputs.append(output)
            decision = output.decision or ("stop" if output.continue_ is False else "pass")
            if logged:
                await agent.append(
                    HookResult(
                        data=HookResultData(
                            turn=turn,
                            point=point,
                            handler_id=handler,
                            decision=decision,
                            exit_code=output.exit_code,
                            stderr_summary=summarize(output.stderr, self._config.stderr_summary_max_chars),
                            duration_ms=float(clock.now_ms() - started),
                        )
                    )
                )
        return merge(outputs)

    async def _run(
        self, dialect: str, point: str, hook: CommandHook, payload: dict[str, Any], cwd: Path
    ) -> HookOutput:
        env = self._environment.child_env(os.environ, self._policy)
        if dialect == "claude-code":
            env["CLAUDE_PROJECT_DIR"] = str(cwd)
        stdin = json.dumps(payload, ensure_ascii=False) + ("\n" if dialect == "claude-code" else "")
        limit = hook.timeout_s if hook.timeout_s is not None else self._config.timeout_ms / 1000
        code, stdout, stderr = await run_command(
            hook.command, stdin=stdin.encode(), cwd=cwd, env=env, timeout_s=limit
        )
        return parse_output(code, stdout, stderr, point)

    # ------------------------------------------------------------------ payloads

    def payload(self, dialect: str, point: str, agent: Any, turn: int, **fields: Any) -> dict[str, Any]:
        cwd = str(agent.cwd) if agent is not None and agent.cwd is not None else os.getcwd()
        session = agent.id if agent is not None else ""
        if dialect == "claude-code":
            return {
                "session_id": session,
                "transcript_path": "",
                "cwd": cwd,
                "hook_event_name": point,
                **fields,
            }
        return {
            "session_id": session,
            "transcript_path": None,
            "cwd": cwd,
            "hook_event_name": point,
            "model": self._config.model,
            "permission_mode": "default",
            "turn_id": str(turn),
            **fields,
        }

    # ------------------------------------------------------------------ the seams

    async def _tool_point(self, dialect: str, point: str, execution: ToolExecution, **extra: Any) -> Merged:
        """Run `dialect`'s hooks at tool point `point` for `execution` (Codex sees `tool_input` as `{command}`)."""
        context = execution.context
        tool_input: Any = execution.arguments
        if dialect == "codex":
            command = execution.arguments.get("command")
            tool_input = {"command": command if isinstance(command, str) else ""}
        payload = self.payload(
            dialect,
            point,
            context.agent,
            context.turn,
            tool_name=execution.call.name,
            tool_input=tool_input,
            tool_use_id=execution.call.id,
            **extra,
        )
        return await self.run_point(
            dialect,
            point,
            execution.call.name,
            payload,
            agent=context.agent,
            turn=context.turn,
            anchor=execution.call.id,
        )

    async def pre_execute(
        self,
        value: PreDecision,
        execution: ToolExecution,
        next_: Callable[[PreDecision], Awaitable[PreDecision]],
    ) -> PreDecision:
        context = execution.context
        agent = context.agent
        if agent is None:
            return await next_(value)
        for dialect in DIALECTS:
            merged = await self._tool_point(dialect, "PreToolUse", execution)
            if merged.decision == "deny":
                return Deny(merged.reason or "blocked by PreToolUse hook")
            if merged.decision == "ask" and dialect == "claude-code":
                return Ask(merged.reason)
        return await next_(value)

    async def post_execute(
        self,
        result: ToolResult,
        execution: ToolExecution,
        next_: Callable[[ToolResult], Awaitable[ToolResult]],
    ) -> ToolResult:
        context = execution.context
        agent = context.agent
        if agent is None:
            return await next_(result)
        added: list[AddedContext] = []
        blocked: ToolResult | None = None
        for dialect in DIALECTS:
            merged = await self._tool_point(dialect, "PostToolUse", execution, tool_response=result.text)
            if merged.contexts:
                added.append(AddedContext(merged.contexts, _PLUGIN_NAME[dialect]))
            if merged.decision == "deny" and blocked is None:
                blocked = ToolResult.error(BLOCKED, merged.reason or "blocked by PostToolUse hook")
        outcome = blocked if blocked is not None else await next_(result)
        if not added:
            return outcome
        return ToolResult(
            outcome.text, outcome.is_error, outcome.code, outcome.meta, (*added, *outcome.context)
        )

    async def prompt_submit(
        self,
        value: PromptDecision,
        submit: PromptSubmit,
        next_: Callable[[PromptDecision], Awaitable[PromptDecision]],
    ) -> PromptDecision:
        texts: list[str] = []
        source: PluginSource | None = None
        opening = self._opening.pop(submit.agent.id, None)
        if opening is not None:
            texts.extend(opening[0])
            source = opening[1]
        for dialect in DIALECTS:
            payload = self.payload(dialect, "UserPromptSubmit", submit.agent, submit.turn, prompt=submit.text)
            # Codex's prompt hook runs before its turn in the original, so it logs no hook/* pair
            merged = await self.run_point(
                dialect,
                "UserPromptSubmit",
                "",
                payload,
                agent=submit.agent,
                turn=submit.turn,
                logged=dialect != "codex",
            )
            if merged.decision == "deny":
                if opening is not None:  # kept for the prompt that gets in
                    self._opening[submit.agent.id] = opening
                return BlockPrompt(merged.reason or "blocked by UserPromptSubmit hook")
            if merged.contexts:
                texts.extend(merged.contexts)
                source = source or PluginSource(plugin=_PLUGIN_NAME[dialect])
        downstream = await next_(value)
        if not texts or not isinstance(downstream, AddContext):
            return downstream
        return AddContext((*texts, *downstream.texts), source or downstream.source)

    async def turn_stopping(self, stopping: TurnStopping) -> None:
        for dialect in DIALECTS:
            extra: dict[str, Any] = {"stop_hook_active": False}
            if dialect == "codex":
                extra["last_assistant_message"] = None
            payload = self.payload(dialect, "Stop", stopping.agent, stopping.turn, **extra)
            merged = await self.run_point(
                dialect,
                "Stop",
                "",
                payload,
                agent=stopping.agent,
                turn=stopping.turn,
                anchor=str(stopping.step),
            )
            if merged.decision == "deny":
                await stopping.agent.queue(
                    merged.reason or "continue: blocked by Stop hook",
                    target="next-step",
                    source=PluginSource(plugin=_PLUGIN_NAME[dialect]),
                    inline=True,
                )
                return

    async def session_start(self, opened: SessionOpened) -> None:
        agent = opened.agent
        texts: list[str] = []
        source: PluginSource | None = None
        for dialect in DIALECTS:
            if agent.parent is None:
                point, subject = "SessionStart", opened.source
                payload = self.payload(dialect, point, agent, 0, source=opened.source)
            elif dialect == "claude-code":  # Codex has no subagent points
                point, subject = "SubagentStart", "general-purpose"
                payload = self.payload(dialect, point, agent, 0, agent_id=agent.id, agent_type=subject)
            else:
                continue
            merged = await self.run_point(dialect, point, subject, payload, agent=agent, turn=0, logged=False)
            if merged.contexts:
                texts.extend(merged.contexts)
                source = source or PluginSource(plugin=_PLUGIN_NAME[dialect])
        if texts and source is not None:
            self._opening[agent.id] = (texts, source)

    async def session_end(self, closing: SessionClosing) -> None:
        agent = closing.agent
        self._opening.pop(agent.id, None)
        self._locks.pop(agent.id, None)
        if agent.parent is None:
            return
        payload = self.payload(
            "claude-code",
            "SubagentStop",
            agent,
            0,
            agent_id=agent.id,
            agent_type="general-purpose",
            stop_hook_active=False,
        )
        await self.run_point(
            "claude-code", "SubagentStop", "general-purpose", payload, agent=agent, turn=0, logged=False
        )


HOOKS = ServiceKey[Hooks]("hooks")


def _apply(ctx: Context, config: HooksConfig) -> None:
    hooks = Hooks(ctx, config, ctx.get(TOOL_ENV))
    ctx.provide(HOOKS, hooks)
    ctx.on(PRE_EXECUTE, hooks.pre_execute)
    ctx.on(POST_EXECUTE, hooks.post_execute)
    ctx.on(PROMPT_SUBMIT, hooks.prompt_submit)
    ctx.on(TURN_STOPPING, hooks.turn_stopping)
    ctx.on(SESSION_START, hooks.session_start)
    ctx.on(SESSION_END, hooks.session_end)


plugin = Plugin(
    name="hooks",
    apply=_apply,
    config=HooksConfig,
    needs=(TOOL_ENV,),
    provides=(HOOKS,),
    description="Claude Code and Codex hooks.json: PreToolUse, PostToolUse, UserPromptSubmit and Stop hooks run as "
    "guarded subprocesses, logged hook/invoked and hook/result; SessionStart, SubagentStart and SubagentStop too",
)
