"""What a model call asks for (`LlmRequest`: provider, model, system, messages, tools, call config) and the adapter
protocol every transport implements, live or replayed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Protocol

import msgspec

from ._chunks import StreamChunk
from ._content import Message
from ._frozen import freeze_parameters

__all__ = ["CallConfig", "CallKey", "ContextWindowAdapter", "LlmAdapter", "LlmRequest", "ToolSchema"]


class ToolSchema(msgspec.Struct, frozen=True):
    """A tool as the model sees it: its name, its description and its parameters as a JSON Schema object. Prompt
    assembly produces them (dsh.runtime.prompt), a model call offers them (`LlmRequest.tools`) and `request/header`
    logs them: one value all the way, never copied field by field.

    A value: the parameters are frozen when the schema is built or decoded (a read-only deep copy; not JSON-shaped
    raises `ToolSchemaError`), so one schema is shared by every assembly and request, and changing its parameters in
    place raises `ReadOnlyToolSchemaError`. To change a tool for one assembly, put a new schema in its place
    (`msgspec.structs.replace(schema, parameters=...)`). The frozen form encodes to the bytes of the plain one.

    Fields it does not model are ignored when it is decoded (a `request/header` of a newer or foreign log keeps
    them in its stored bytes; the typed view reads these three)."""

    name: str
    description: str
    parameters: dict[str, Any] = msgspec.field(default_factory=lambda: {"type": "object", "properties": {}})

    def __post_init__(self) -> None:
        msgspec.structs.force_setattr(self, "parameters", freeze_parameters(self.parameters, self.name))


class CallConfig(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="camel", omit_defaults=True, kw_only=True
):
    """Per-call settings (the `request/header` config beside provider and model). Unset means the provider's
    default. `reasoning_effort` is `low|high|max`, or `off` to disable thinking."""

    temperature: float | None = None
    max_tokens: int | None = None
    reasoning_effort: str | None = None
    stop: tuple[str, ...] | None = None


class CallKey(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Which model call of a session this is. Never sent to a provider; the replay adapter serves recorded chunks
    by it.

    `purpose` says whose call it is: `"step"` is the agent loop's call of (`turn`, `step`), where `attempt` counts
    from 1 and a retry is the next attempt. An auxiliary call a plugin makes inside a turn names its own purpose
    (`"compaction"`: dsh.plugins.compaction, whose README states how its `step` and `attempt` are numbered), so its
    numbering never collides with the loop's attempts."""

    turn: int
    step: int
    attempt: int = 1
    purpose: str = "step"


class LlmRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One model call: routed by `provider`, sent to `model` with `system` first, then `messages`. `session_id` and
    `call` say which session and which call of it this is (the agent loop sets both); adapters never send them."""

    provider: str
    model: str
    messages: tuple[Message, ...]
    system: str = ""
    tools: tuple[ToolSchema, ...] = ()
    config: CallConfig = CallConfig()
    session_id: str | None = None
    call: CallKey | None = None


class LlmAdapter(Protocol):
    """A model transport. `stream` yields chunks for one call and ends with one `finish`; it may instead raise
    (an `LlmCallError` with a code, or anything else) and `LlmRuntime` turns that into the terminal chunk.
    Cancellation must propagate. The iterator is closed (`aclose`) when the caller stops early.

    An adapter may also answer `context_window(provider, model) -> int | None`: the context window, in tokens, of
    `model` as served under `provider` (None: it does not know). The method is optional (`ContextWindowAdapter`);
    `LlmRuntime.context_window` answers None for an adapter without it."""

    def stream(self, request: LlmRequest) -> AsyncIterator[StreamChunk]: ...


class ContextWindowAdapter(LlmAdapter, Protocol):
    """An adapter that knows its models' context windows: `context_window(provider, model)` is the window in tokens,
    or None when unknown. `provider` is the id the adapter was registered under (one adapter may serve several)."""

    def context_window(self, provider: str, model: str) -> int | None: ...
