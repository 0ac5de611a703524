"""Authored recordings: a model whose replies are written by hand in `replies.yml`, served in order by a transport
that implements the live adapter's protocol. `dsh record SCENARIO --script replies.yml` runs the real loop and tools
against it and writes the log, so a scenario can be made, and re-made after a behaviour change, with no key."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Literal

import anyio
import msgspec
import yaml

from dsh.runtime.kernel import Context, Plugin, ServiceKey
from dsh.runtime.llm import (
    LLM,
    BlockEnd,
    BlockStart,
    CallId,
    Finish,
    FinishError,
    FinishMaxTokens,
    FinishReason,
    FinishStop,
    FinishToolCalls,
    LlmFailure,
    LlmRequest,
    ReasoningBlock,
    ReasoningDelta,
    StreamChunk,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    UsageChunk,
)
from dsh.runtime.session import STORE, SessionStoreProtocol

from ..recordings._errors import ReplayMismatch, ScriptError
from ..recordings._placeholders import with_cwd

__all__ = [
    "SCRIPTED",
    "Reply",
    "ScriptedConfig",
    "ScriptedModel",
    "load_replies",
    "reply_chunks",
    "scripted_plugin",
]


class ToolCallSpec(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One tool call of a reply: `arguments` is a mapping (written as JSON) or the raw JSON text."""

    name: str
    arguments: dict[str, Any] | str = msgspec.field(default_factory=dict)


class ErrorSpec(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    code: str
    message: str = "scripted provider failure"


class Reply(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One model call's answer: `reasoning`, `text` and `tool_calls` (in that block order), or an `error`.
    `finish` defaults to `tool-calls` when there are calls, else `stop`. `depth`, when set, reserves the reply
    for a call from a session at that delegation depth (0: the primary agent, 1: its children): agents running at
    once (a background child and its parent) call in no fixed order, so each takes its own replies in order."""

    reasoning: str | None = None
    text: str | None = None
    tool_calls: tuple[ToolCallSpec, ...] = ()
    finish: Literal["stop", "tool-calls", "max-tokens"] | None = None
    error: ErrorSpec | None = None
    depth: int | None = None


class _Replies(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    replies: tuple[Reply, ...]


def load_replies(path: Path) -> tuple[Reply, ...]:
    """`replies.yml`: `replies: [...]`, strictly decoded (an unknown key names its place)."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        return msgspec.convert(raw, _Replies, strict=True).replies
    except (OSError, yaml.YAMLError, msgspec.ValidationError) as error:
        raise ScriptError(f"bad replies file: {error}", place=str(path)) from None


def _halves(text: str) -> list[str]:
    half = len(text) // 2
    return [part for part in (text[:half], text[half:]) if part] or [""]


def reply_chunks(reply: Reply, number: int) -> list[StreamChunk]:
    """The stream of one reply: each block opened, filled in two deltas and closed; usage; finish."""
    if reply.error is not None:
        return [Finish(reason=FinishError(LlmFailure(message=reply.error.message, code=reply.error.code)))]
    chunks: list[StreamChunk] = []
    index = 0
    for kind, value in (("reasoning", reply.reasoning), ("text", reply.text)):
        if value is None:
            continue
        chunks.append(BlockStart(index=index, block_type="reasoning" if kind == "reasoning" else "text"))
        for part in _halves(value):
            delta = ReasoningDelta if kind == "reasoning" else TextDelta
            chunks.append(delta(index=index, text=part))
        block = ReasoningBlock(value) if kind == "reasoning" else TextBlock(value)
        chunks.append(BlockEnd(index=index, block=block))
        index += 1
    for position, call in enumerate(reply.tool_calls):
        call_id = CallId(f"call_{number}_{position}")
        arguments = call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)
        chunks.append(BlockStart(index=index, block_type="tool-call"))
        for part_number, part in enumerate(_halves(arguments)):
            name = call.name if part_number == 0 else None
            chunks.append(ToolCallDelta(index=index, id=call_id, name=name, arguments_delta=part))
        chunks.append(BlockEnd(index=index, block=ToolCallBlock(call_id, call.name, arguments)))
        index += 1
    written = len(reply.text or "") + len(reply.reasoning or "")
    chunks.append(UsageChunk(TokenUsage(input_tokens=100 + 10 * number, output_tokens=1 + written // 4)))
    finish = reply.finish or ("tool-calls" if reply.tool_calls else "stop")
    reasons: dict[str, FinishReason] = {
        "stop": FinishStop(),
        "tool-calls": FinishToolCalls(),
        "max-tokens": FinishMaxTokens(),
    }
    chunks.append(Finish(reason=reasons[finish]))
    return chunks


class ScriptedModel:
    """Serves `replies` in order, whichever session calls (a reply with a `depth` only to a session at that
    delegation depth); `{{cwd}}` in a reply is the calling session's cwd."""

    def __init__(
        self, replies: tuple[Reply, ...], store: SessionStoreProtocol, *, source: str = "the replies"
    ) -> None:
        self.replies = replies
        self.served = 0
        self.asked = 0
        self.source = source
        self._taken = [False] * len(replies)
        self._store = store

    def assert_consumed(self) -> None:
        """Raise unless the run asked for exactly one model call per reply: too few replies leave a call with none
        (its turn failed), too many are replies the run never asked for; either way the recording is not the one
        the replies describe."""
        if self.asked == self.served == len(self.replies):
            return
        unserved = [str(i + 1) for i, taken in enumerate(self._taken) if not taken]
        count = len(self.replies)
        if self.asked > self.served:
            detail = f"the run asked for {self.asked} model calls: add the {self.asked - self.served} missing"
        else:
            detail = (
                f"the run asked for {self.asked} model call{'' if self.asked == 1 else 's'}: reply "
                f"{', '.join(unserved)} {'was' if len(unserved) == 1 else 'were'} never served (remove "
                f"{'it' if len(unserved) == 1 else 'them'}, or add the inputs that ask for more)"
            )
        raise ReplayMismatch(
            f"{self.source} holds {count} repl{'y' if count == 1 else 'ies'} and {detail}",
            session_id=None,
            log=None,
            call=None,
            recorded=f"{count} replies",
            asked=f"{self.asked} model calls",
        )

    def _next(self, session_id: str | None) -> int | None:
        depth = 0 if session_id is None else self._store.info(session_id).delegation_depth
        return next(
            (
                i
                for i, reply in enumerate(self.replies)
                if not self._taken[i] and (reply.depth is None or reply.depth == depth)
            ),
            None,
        )

    async def stream(self, request: LlmRequest) -> AsyncIterator[StreamChunk]:
        self.asked += 1
        index = self._next(request.session_id)
        if index is None:
            raise ReplayMismatch(
                f"the scripted model has {len(self.replies)} replies, {self.served} served, and none left for "
                f"session {request.session_id!r}",
                session_id=request.session_id,
                log=None,
                call=request.call,
                recorded=f"{len(self.replies)} replies",
                asked="one more call",
            )
        self._taken[index] = True
        self.served += 1
        chunks: tuple[StreamChunk, ...] = tuple(reply_chunks(self.replies[index], index + 1))
        cwd = None if request.session_id is None else self._store.info(request.session_id).cwd
        if cwd is not None:
            chunks = with_cwd(chunks, cwd)
        for chunk in chunks:
            await anyio.lowlevel.checkpoint()
            yield chunk


class ScriptedConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """`replies`: the replies file; `providers`: the provider ids to serve."""

    replies: str
    providers: tuple[str, ...]


SCRIPTED = ServiceKey[ScriptedModel]("replay/scripted-model")
"""The loaded scripted model: a recording driver calls `assert_consumed()` at the end of the run."""


def _apply(ctx: Context, config: ScriptedConfig) -> None:
    model = ScriptedModel(load_replies(Path(config.replies)), ctx.get(STORE), source=config.replies)
    llm = ctx.get(LLM)
    for provider in config.providers:
        llm.register(provider, model)
    ctx.provide(SCRIPTED, model)


scripted_plugin = Plugin(
    name="scripted-model",
    apply=_apply,
    config=ScriptedConfig,
    needs=(LLM, STORE),
    provides=(SCRIPTED,),
    description="a model whose replies are written by hand (authored recordings)",
)
