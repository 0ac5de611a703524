"""Messages and their content blocks, as the session log stores them (wire names and tags of the original).

Fields dsh does not model are accepted, not refused (the original adds fields over time): the log keeps every
event's payload as written, so they survive import, storage and export; the typed values here hold what dsh reads.

A message is `user` (the prompt, injected context, tool results) or `assistant` (what a model said). Blocks are
frozen, tagged msgspec Structs: `text`, `reasoning`, `image`, `tool-call`, `tool-result`.
"""

from __future__ import annotations

from typing import Any, Literal, NewType

import msgspec

__all__ = [
    "AssistantBlock",
    "AssistantMessage",
    "CallId",
    "ContentBlock",
    "ImageBlock",
    "JobNoticeSource",
    "Message",
    "MessageId",
    "MessageSource",
    "ModelSource",
    "OtherSource",
    "PluginSource",
    "ReasoningBlock",
    "SubagentReportSource",
    "SubagentSettledSource",
    "TextBlock",
    "ToolCallBlock",
    "ToolResultBlock",
    "ToolResultContent",
    "ToolSource",
    "UserBlock",
    "UserMessage",
    "UserMessageSource",
    "UserSource",
]

MessageId = NewType("MessageId", str)
CallId = NewType("CallId", str)


class TextBlock(msgspec.Struct, frozen=True, tag="text"):
    """Visible text."""

    text: str


class ReasoningBlock(msgspec.Struct, frozen=True, tag="reasoning"):
    """The model's reasoning (DeepSeek `reasoning_content`); passed back to the provider in history."""

    text: str


class ImageBlock(msgspec.Struct, frozen=True, tag="image", rename="camel", omit_defaults=True, kw_only=True):
    """An image: inline, base64 `data` of type `mime_type` (wire `mimeType`), or a reference to a stored
    `attachment` (the original's web app and ACP server log `{attachmentId, mediaType, width, height, bytes}`;
    dsh keeps it as written and cannot send it to a model without its bytes)."""

    data: str | None = None
    mime_type: str | None = None
    attachment: dict[str, Any] | None = None


class ToolCallBlock(msgspec.Struct, frozen=True, tag="tool-call"):
    """A call the model asked for; `arguments` is the raw JSON text as the model wrote it."""

    id: CallId
    name: str
    arguments: str


ToolResultContent = TextBlock | ImageBlock


class ToolResultBlock(msgspec.Struct, frozen=True, tag="tool-result", rename="camel", kw_only=True):
    """The outcome of one tool call (wire `toolCallId`, `isError`; `isError` is always written)."""

    tool_call_id: CallId
    content: tuple[ToolResultContent, ...]
    is_error: bool = False


AssistantBlock = TextBlock | ReasoningBlock | ToolCallBlock
UserBlock = TextBlock | ImageBlock | ToolResultBlock
ContentBlock = TextBlock | ReasoningBlock | ImageBlock | ToolCallBlock | ToolResultBlock


class UserSource(msgspec.Struct, frozen=True, tag_field="kind", tag="user"):
    """The user typed it."""


class PluginSource(
    msgspec.Struct,
    frozen=True,
    tag_field="kind",
    tag="plugin",
    rename="camel",
    omit_defaults=True,
    kw_only=True,
):
    """A plugin injected it (runtime context, a compaction checkpoint, a notice...). `summary`: a notice's one-line
    gist (`read \u00d7 3`), as the original writes it."""

    plugin: str
    form: str | None = None
    compaction_id: str | None = None
    summary: str | None = None


class ToolSource(msgspec.Struct, frozen=True, tag_field="kind", tag="tool", rename="camel"):
    """A tool result message, answering call `call_id` (wire `callId`)."""

    call_id: CallId


class ModelSource(
    msgspec.Struct,
    frozen=True,
    tag_field="kind",
    tag="model",
    rename="camel",
    omit_defaults=True,
    kw_only=True,
):
    """A model said it; `replay_state` is the adapter's opaque provider state (wire `replayState`)."""

    provider: str
    model: str
    replay_state: Any = None


class InstructionChange(msgspec.Struct, frozen=True, omit_defaults=True, kw_only=True):
    """One workspace instruction file's transition: `set` (loaded), `replace` (its content changed) or `remove`.
    `scope` is the file's directory and name joined by NUL (`nested\u0000AGENTS.md`), `path` the file relative to
    the project root, `digest` the SHA-1 of the exact text sent (absent on `remove`)."""

    action: Literal["set", "replace", "remove"]
    scope: str
    path: str
    digest: str | None = None


class InstructionsSource(
    msgspec.Struct,
    frozen=True,
    tag_field="kind",
    tag="agent-instructions",
    rename="camel",
    omit_defaults=True,
    kw_only=True,
):
    """Workspace instructions (AGENTS.md, CLAUDE.md) the `instructions` plugin sent, as the original writes them:
    `form` `instructions`, `baseline` set on a message that carries the whole root-to-cwd baseline, with the
    discovery settings it was made under (`baseline_identity`, wire `baselineIdentity`, a JSON text), and each file's
    transition in `changes`: what a later step compares the workspace with."""

    form: str
    baseline: bool = False
    baseline_identity: str | None = None
    changes: tuple[InstructionChange, ...] = ()


class SubagentReportSource(
    msgspec.Struct,
    frozen=True,
    tag_field="kind",
    tag="subagent-report",
    rename="camel",
    omit_defaults=True,
    kw_only=True,
):
    """What a background subagent sent its parent with its `report` tool, as the original writes it:
    `subagent-report{form: relay, senderSessionId}`. `sender_session_id` (wire `senderSessionId`) is the child's
    session id: a replay pairs the report with the live child bound to the recorded one."""

    form: str | None = None
    sender_session_id: str | None = None


class SubagentSettledSource(
    msgspec.Struct,
    frozen=True,
    tag_field="kind",
    tag="subagent-settled",
    rename="camel",
    omit_defaults=True,
    kw_only=True,
):
    """The notice a continuable subagent's settled turn sends its parent, as the original writes it:
    `subagent-settled{form: notice, summary, senderSessionId}` (`summary`: the notice's first line)."""

    form: str | None = None
    summary: str | None = None
    sender_session_id: str | None = None


class JobNoticeSource(
    msgspec.Struct,
    frozen=True,
    tag_field="kind",
    tag="job-settled",
    rename="camel",
    omit_defaults=True,
    kw_only=True,
):
    """The notice a settled background job sends its agent: `job-settled{form: notice, summary, jobId}` (dsh's own
    kind: the original has no background jobs of its own). `job_id` (wire `jobId`) names the job: a replay pairs the
    notice with the recorded notice of the same job, however the jobs' settlements were scheduled."""

    form: str | None = None
    summary: str | None = None
    job_id: str | None = None


class OtherSource(msgspec.Struct, frozen=True, tag_field="kind", tag="other", kw_only=True):
    """A source kind dsh does not model: the original's plugins add their own (`agent-message`, `goal`, ...).
    `name` is the kind as written (the session log reads such a message as this, and keeps the source as written);
    the message is history like any other user-role message."""

    name: str


UserMessageSource = (
    UserSource
    | PluginSource
    | ToolSource
    | InstructionsSource
    | SubagentReportSource
    | SubagentSettledSource
    | JobNoticeSource
    | OtherSource
)
"""Where a user-role message comes from (wire `source`, tagged by `kind`)."""
MessageSource = UserMessageSource | ModelSource


def source_kind(source: UserMessageSource) -> str:
    """A source's kind as the log writes it (`user`, `plugin`, `subagent-report`, ..., or the name of a kind dsh
    does not model)."""
    return source.name if isinstance(source, OtherSource) else str(source.__struct_config__.tag)


class UserMessage(msgspec.Struct, frozen=True, tag_field="role", tag="user", kw_only=True):
    """A user-role message: the prompt, injected context, or tool results (source `tool`)."""

    id: MessageId
    content: tuple[UserBlock, ...]
    source: UserMessageSource = UserSource()


class AssistantMessage(msgspec.Struct, frozen=True, tag_field="role", tag="assistant", kw_only=True):
    """What a model said in one call: its assembled blocks and which provider and model said it."""

    id: MessageId
    content: tuple[AssistantBlock, ...]
    source: ModelSource


Message = UserMessage | AssistantMessage
