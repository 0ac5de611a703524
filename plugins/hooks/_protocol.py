"""What both hook dialects share, as the original's hook protocol defines it: the `hooks.json` shape (points ->
matcher groups -> command hooks), matchers, decoding a hook's exit code, stdout and stderr into a neutral outcome,
folding the outcomes of every hook at one point (deny > ask > allow), and running one command hook: `bash -c` under
dsh's process guard, with the tool environment policy, the event's JSON on stdin and a timeout. A hook that cannot
run, hangs, crashes or prints garbage is an outcome like any other: it never raises."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream

from dsh.runtime.tools.guard import guarded

__all__ = [
    "BLOCKING_EXIT_CODE",
    "POINTS",
    "CommandHook",
    "HookConfigError",
    "HookOutput",
    "MatcherGroup",
    "Merged",
    "matches",
    "merge",
    "parse_config",
    "parse_output",
    "run_command",
    "summarize",
]

BLOCKING_EXIT_CODE = 2
POINTS = (
    "PreToolUse",
    "PostToolUse",
    "UserPromptSubmit",
    "Stop",
    "SessionStart",
    "SubagentStart",
    "SubagentStop",
)
"""The hook points dsh runs (the others a config names are read and never fire)."""

_OUTPUT_CAP = 1 << 20
_EXACT = re.compile(r"[A-Za-z0-9_|]+")


class HookConfigError(ValueError):
    """A hooks file that is not the shape both dialects share."""


@dataclass(frozen=True)
class CommandHook:
    """One `{type: "command", command, timeout?}` hook (`timeout` in seconds, as the wire has it)."""

    command: str
    timeout_s: float | None = None


@dataclass(frozen=True)
class MatcherGroup:
    """A matcher (None, `""` or `*`: every subject) and the command hooks it selects."""

    matcher: str | None
    hooks: tuple[CommandHook, ...]


def parse_config(raw: object, *, where: str) -> dict[str, list[MatcherGroup]]:
    """The groups per point of a hooks file (`{"hooks": {...}}`, a settings file whose `hooks` key holds them). Hook
    types other than `command` (`prompt`, `agent`, `http`) are skipped, as the original skips them."""
    if not isinstance(raw, dict):
        raise HookConfigError(f"{where}: expected a JSON object with a `hooks` key")
    hooks = raw.get("hooks", {})
    if not isinstance(hooks, dict):
        raise HookConfigError(f"{where}: `hooks` must be an object of hook points")
    out: dict[str, list[MatcherGroup]] = {}
    for point, groups in hooks.items():
        if not isinstance(groups, list):
            raise HookConfigError(f"{where}: hooks.{point} must be a list of matcher groups")
        for index, group in enumerate(groups):
            if not isinstance(group, dict) or not isinstance(group.get("hooks", []), list):
                raise HookConfigError(f"{where}: hooks.{point}[{index}] must be {{matcher?, hooks: [...]}}")
            matcher = group.get("matcher")
            if matcher is not None and not isinstance(matcher, str):
                raise HookConfigError(f"{where}: hooks.{point}[{index}].matcher must be a string")
            commands = []
            for hook in group.get("hooks", []):
                if not isinstance(hook, dict) or hook.get("type") != "command":
                    continue
                command, timeout = hook.get("command"), hook.get("timeout")
                if not isinstance(command, str) or not command:
                    raise HookConfigError(
                        f"{where}: hooks.{point}[{index}]: a command hook needs a `command`"
                    )
                if timeout is not None and (not isinstance(timeout, int | float) or timeout <= 0):
                    raise HookConfigError(f"{where}: hooks.{point}[{index}]: `timeout` is positive seconds")
                commands.append(CommandHook(command, float(timeout) if timeout is not None else None))
            out.setdefault(point, []).append(MatcherGroup(matcher, tuple(commands)))
    return out


def matches(matcher: str | None, subject: str) -> bool:
    """Whether `matcher` selects `subject`: absent, empty or `*` match all; letters, digits, `_` and `|` are exact
    alternatives; anything else is an unanchored regular expression (an invalid one matches nothing)."""
    if matcher is None or matcher in ("", "*"):
        return True
    if _EXACT.fullmatch(matcher):
        return subject in matcher.split("|")
    try:
        return re.search(matcher, subject) is not None
    except re.error:
        return False


@dataclass
class HookOutput:
    """A hook's outcome, dialect-neutral: its exit code (None: it did not exit by itself, or could not run), trimmed
    stderr and stdout, and what its output said (`decision`: block/deny forbid, approve/allow permit, ask asks)."""

    exit_code: int | None
    stderr: str
    stdout: str
    decision: str | None = None
    reason: str | None = None
    additional_context: str | None = None
    continue_: bool | None = None
    stop_reason: str | None = None
    system_message: str | None = None


def parse_output(exit_code: int | None, stdout: str, stderr: str, event: str | None = None) -> HookOutput:
    """Decode a hook's outcome: exit 2 blocks with stderr as the reason; exit 0 may carry JSON (the top-level
    `decision` approve/block and `reason`, `continue`, `stopReason`, `systemMessage`, and the `hookSpecificOutput`
    of `event`: `permissionDecision` allow/deny/ask, `permissionDecisionReason`, `additionalContext`); anything else
    (another exit code, plain or malformed output) decides nothing."""
    output = HookOutput(exit_code, stderr.strip(), stdout.strip())
    if exit_code == BLOCKING_EXIT_CODE:
        output.decision = "block"
        output.reason = output.stderr or None
    if exit_code == 0 and output.stdout.startswith("{"):
        try:
            parsed = json.loads(output.stdout)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            _structured(output, parsed, event)
    return output


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _structured(output: HookOutput, parsed: dict[str, Any], event: str | None) -> None:
    if isinstance(parsed.get("continue"), bool):
        output.continue_ = parsed["continue"]
    output.stop_reason = _text(parsed.get("stopReason"))
    output.system_message = _text(parsed.get("systemMessage"))
    if parsed.get("decision") in ("approve", "block"):
        output.decision = parsed["decision"]
    if (reason := _text(parsed.get("reason"))) is not None:
        output.reason = reason
    specific = parsed.get("hookSpecificOutput")
    if not isinstance(specific, dict):
        return
    if event is not None and specific.get("hookEventName") != event:
        return  # a block for another event: its event-scoped fields are discarded
    if specific.get("permissionDecision") in ("allow", "deny", "ask"):
        output.decision = specific["permissionDecision"]
    if (reason := _text(specific.get("permissionDecisionReason"))) is not None:
        output.reason = reason
    output.additional_context = _text(specific.get("additionalContext"))


_RANK = {"deny": 3, "block": 3, "ask": 2, "allow": 1, "approve": 1}
_MERGED = {3: "deny", 2: "ask", 1: "allow", 0: "none"}


@dataclass(frozen=True)
class Merged:
    """Every matched hook's outcome folded: the strictest decision (deny > ask > allow > none), the reasons of that
    rank joined by a blank line, and every additional context in hook order."""

    decision: str = "none"
    reason: str | None = None
    contexts: tuple[str, ...] = field(default_factory=tuple)


def merge(outputs: list[HookOutput]) -> Merged:
    top = 0
    reasons: dict[int, list[str]] = {}
    contexts = []
    for output in outputs:
        rank = _RANK.get(output.decision or "", 0)
        top = max(top, rank)
        if rank >= 2 and output.reason:
            reasons.setdefault(rank, []).append(output.reason)
        if output.additional_context:
            contexts.append(output.additional_context)
    joined = "\n\n".join(reasons.get(top, [])) or None
    return Merged(_MERGED[top], joined, tuple(contexts))


def summarize(stderr: str, cap: int) -> str | None:
    """The `stderrSummary` of a result: stderr trimmed, None when blank, cut at `cap` characters with an ellipsis."""
    text = stderr.strip()
    if not text:
        return None
    return text[:cap] + "…" if len(text) > cap else text


async def _read(stream: ByteReceiveStream | None, into: bytearray) -> None:
    if stream is None:
        return
    async for chunk in stream:
        room = _OUTPUT_CAP - len(into)
        if room > 0:
            into += chunk[:room]


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def run_command(
    command: str, *, stdin: bytes, cwd: Path, env: Mapping[str, str], timeout_s: float
) -> tuple[int | None, str, str]:
    """Run `command` with `bash -c` in `cwd` under dsh's process guard (its whole process group is killed on timeout,
    on cancellation and when dsh dies), `stdin` written to it; return (exit code, stdout, stderr). The exit code is
    None when it did not exit by itself: timed out (stderr then ends with `[timed out after <n>ms]`), killed by a
    signal, or could not start (stderr says why)."""
    try:
        process = await anyio.open_process(
            guarded(["bash", "-c", command]),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as error:
        return None, "", f"hook could not start: {error}"
    out, err = bytearray(), bytearray()
    timed_out = False
    try:
        with anyio.move_on_after(timeout_s) as deadline:
            async with anyio.create_task_group() as group:
                group.start_soon(_read, process.stdout, out)
                group.start_soon(_read, process.stderr, err)
                if process.stdin is not None:
                    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                        await process.stdin.send(stdin)
                    with contextlib.suppress(OSError):
                        await process.stdin.aclose()
            await process.wait()
        timed_out = deadline.cancelled_caught
    finally:
        if process.returncode is None:
            _kill_group(process.pid)
        with anyio.CancelScope(shield=True):
            await process.wait()
            await process.aclose()
    stderr = err.decode("utf-8", "replace")
    if timed_out:
        stderr = (
            stderr.rstrip("\n") + "\n" if stderr.strip() else ""
        ) + f"[timed out after {int(timeout_s * 1000)}ms]"
        return None, out.decode("utf-8", "replace"), stderr
    code = process.returncode
    return (code if code is not None and code >= 0 else None), out.decode("utf-8", "replace"), stderr
