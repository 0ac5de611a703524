"""The `bash` tool: its description and schema (names as the original's, so recorded sessions replay), the result
text with its markers, the plugin and its config."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import anyio
import msgspec

from runtime.kernel import Context, Plugin
from runtime.prompt import SYSTEM_PROMPT, PromptSection
from runtime.tools import TOOLS, Tool, ToolContext, ToolResult

from .shell import ShellOutcome, TailBuffer, run_shell

__all__ = ["DESCRIPTION", "SECTION", "BashConfig", "format_outcome", "plugin"]

DESCRIPTION = (
    "Run a command with `bash -c` and return what it printed. Every call starts a fresh shell in the workspace: "
    "nothing (working directory, variables, functions) carries over between calls, so pass `workdir` rather than "
    "running `cd`. stdout comes first; stderr follows under a `[stderr]` line. A non-zero exit adds "
    "`[exit code: N]` as the last line, a timeout adds `[timed out after <n>ms]`, and death by a signal adds "
    "`[killed by signal: NAME]`. Long output is cut to its tail, with a note saying how much was dropped. "
    "Prefer the dedicated file tools for reading, writing, editing and searching files."
)

SECTION = PromptSection(
    "tool:bash",
    105,
    "After every bash call, look for the `[exit code: N]` marker before trusting the output; when a command "
    "failed, find out why before moving on.",
)
"""The cross-call habit a single call's description cannot carry (check every result's exit code); what a call does
lives in DESCRIPTION."""

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {"type": "string", "minLength": 1, "description": "The bash command to run."},
        "description": {
            "type": "string",
            "minLength": 1,
            "description": "What the command does, in 5-10 words of active voice (shown to the user), "
            'e.g. "List files in the workspace".',
        },
        "timeoutMs": {
            "type": "number",
            "exclusiveMinimum": 0,
            "description": "Timeout in milliseconds; the configured default applies when omitted, and the "
            "configured maximum caps it. The command is killed when it expires.",
        },
        "workdir": {
            "type": "string",
            "description": "Directory to run in; defaults to the workspace, and a relative path is resolved "
            "against it.",
        },
    },
    "required": ["command", "description"],
}


class BashConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """`timeout_ms`: the default per call; `max_timeout_ms`: the cap on `timeoutMs`; `output_cap_bytes`: the
    tail kept of each stream."""

    timeout_ms: int = 120_000
    max_timeout_ms: int = 600_000
    output_cap_bytes: int = 30_000

    def __post_init__(self) -> None:
        for name in ("timeout_ms", "max_timeout_ms", "output_cap_bytes"):
            if getattr(self, name) <= 0:
                raise msgspec.ValidationError(f"`{name}` must be positive")
        if self.timeout_ms > self.max_timeout_ms:
            raise msgspec.ValidationError("`timeout_ms` must not exceed `max_timeout_ms`")


def _stream_text(buffer: TailBuffer) -> str:
    text = buffer.text()
    if buffer.dropped:
        text = f"[output truncated: the first {buffer.dropped} of {buffer.total} bytes were dropped]\n{text}"
    return text


def format_outcome(outcome: ShellOutcome, *, timeout_ms: int) -> str:
    """stdout, then `[stderr]` and stderr, or `(no output)`; then the markers, the exit code last."""
    text = _stream_text(outcome.stdout)
    if outcome.stderr.total:
        if text and not text.endswith("\n"):
            text += "\n"
        text += "[stderr]\n" + _stream_text(outcome.stderr)
    if not text:
        text = "(no output)"
    markers = []
    if outcome.timed_out:
        markers.append(f"[timed out after {timeout_ms}ms]")
    if outcome.returncode < 0:
        markers.append(f"[killed by signal: {signal.Signals(-outcome.returncode).name}]")
    elif outcome.returncode > 0:
        markers.append(f"[exit code: {outcome.returncode}]")
    if markers:
        text = text + ("" if text.endswith("\n") else "\n") + "\n".join(markers)
    return text


def _make_tool(config: BashConfig) -> Tool:
    async def execute(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        timeout_ms = int(min(arguments.get("timeoutMs", config.timeout_ms), config.max_timeout_ms))
        workdir = context.cwd / Path(arguments.get("workdir", "."))
        if not await anyio.Path(workdir).is_dir():
            return ToolResult.error(
                "WORKDIR_NOT_FOUND", f"workdir {workdir} does not exist or is not a directory"
            )
        outcome = await run_shell(
            arguments["command"],
            cwd=workdir,
            limit_seconds=timeout_ms / 1000,
            cap=config.output_cap_bytes,
            env=os.environ,
        )
        return ToolResult(
            format_outcome(outcome, timeout_ms=timeout_ms),
            meta={"exitCode": outcome.returncode, "timedOut": outcome.timed_out},
        )

    return Tool(name="bash", description=DESCRIPTION, parameters=PARAMETERS, execute=execute)


def _apply(ctx: Context, config: BashConfig) -> None:
    ctx.get(TOOLS).register(_make_tool(config))
    ctx.get(SYSTEM_PROMPT).section(SECTION)


plugin = Plugin(
    name="tool-bash",
    apply=_apply,
    config=BashConfig,
    needs=(SYSTEM_PROMPT, TOOLS),
    description="the bash tool, and its tool:bash prompt section",
)
