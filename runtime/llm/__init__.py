"""The model transport's public names: messages and blocks, the chunk protocol, requests, the adapter protocol,
`LlmRuntime` (service `LLM`, plugin `plugin`) and `BlockAssembler`."""

TYPE_CHECKING = False
if TYPE_CHECKING:  # the names for type checkers; at run time each is imported on first use
    from ._assembler import BlockAssembler as BlockAssembler
    from ._chunks import BlockEnd as BlockEnd
    from ._chunks import BlockStart as BlockStart
    from ._chunks import BlockType as BlockType
    from ._chunks import FailureCode as FailureCode
    from ._chunks import Finish as Finish
    from ._chunks import FinishAborted as FinishAborted
    from ._chunks import FinishError as FinishError
    from ._chunks import FinishMaxTokens as FinishMaxTokens
    from ._chunks import FinishReason as FinishReason
    from ._chunks import FinishStop as FinishStop
    from ._chunks import FinishToolCalls as FinishToolCalls
    from ._chunks import LlmFailure as LlmFailure
    from ._chunks import ReasoningDelta as ReasoningDelta
    from ._chunks import StreamChunk as StreamChunk
    from ._chunks import TextDelta as TextDelta
    from ._chunks import TokenUsage as TokenUsage
    from ._chunks import ToolCallDelta as ToolCallDelta
    from ._chunks import UsageChunk as UsageChunk
    from ._chunks import decode_chunk as decode_chunk
    from ._chunks import encode_chunk as encode_chunk
    from ._content import AssistantBlock as AssistantBlock
    from ._content import AssistantMessage as AssistantMessage
    from ._content import CallId as CallId
    from ._content import ContentBlock as ContentBlock
    from ._content import ImageBlock as ImageBlock
    from ._content import InstructionChange as InstructionChange
    from ._content import InstructionsSource as InstructionsSource
    from ._content import JobNoticeSource as JobNoticeSource
    from ._content import Message as Message
    from ._content import MessageId as MessageId
    from ._content import MessageSource as MessageSource
    from ._content import ModelSource as ModelSource
    from ._content import OtherSource as OtherSource
    from ._content import PluginSource as PluginSource
    from ._content import ReasoningBlock as ReasoningBlock
    from ._content import SubagentReportSource as SubagentReportSource
    from ._content import SubagentSettledSource as SubagentSettledSource
    from ._content import TextBlock as TextBlock
    from ._content import ToolCallBlock as ToolCallBlock
    from ._content import ToolResultBlock as ToolResultBlock
    from ._content import ToolResultContent as ToolResultContent
    from ._content import ToolSource as ToolSource
    from ._content import UserBlock as UserBlock
    from ._content import UserMessage as UserMessage
    from ._content import UserMessageSource as UserMessageSource
    from ._content import UserSource as UserSource
    from ._content import source_kind as source_kind
    from ._errors import ChunkProtocolError as ChunkProtocolError
    from ._errors import ContextWindowError as ContextWindowError
    from ._errors import LlmCallError as LlmCallError
    from ._errors import ProviderConflictError as ProviderConflictError
    from ._errors import ReadOnlyToolSchemaError as ReadOnlyToolSchemaError
    from ._errors import ToolSchemaError as ToolSchemaError
    from ._errors import error_chain as error_chain
    from ._request import CallConfig as CallConfig
    from ._request import CallKey as CallKey
    from ._request import ContextWindowAdapter as ContextWindowAdapter
    from ._request import LlmAdapter as LlmAdapter
    from ._request import LlmRequest as LlmRequest
    from ._request import ToolSchema as ToolSchema
    from ._runtime import LLM as LLM
    from ._runtime import CallStream as CallStream
    from ._runtime import LlmRuntime as LlmRuntime
    from ._runtime import plugin as plugin
    from ._wire import OPENAI_CHAT as OPENAI_CHAT
    from ._wire import WireTransport as WireTransport
    from ._wire import declare_wire_transport as declare_wire_transport
    from ._wire import wire_transport as wire_transport

__all__ = [
    "LLM",
    "OPENAI_CHAT",
    "AssistantBlock",
    "AssistantMessage",
    "BlockAssembler",
    "BlockEnd",
    "BlockStart",
    "BlockType",
    "CallConfig",
    "CallKey",
    "CallId",
    "ChunkProtocolError",
    "ContentBlock",
    "ContextWindowAdapter",
    "ContextWindowError",
    "FailureCode",
    "Finish",
    "FinishAborted",
    "FinishError",
    "FinishMaxTokens",
    "FinishReason",
    "FinishStop",
    "FinishToolCalls",
    "ImageBlock",
    "LlmAdapter",
    "LlmCallError",
    "LlmFailure",
    "LlmRequest",
    "CallStream",
    "LlmRuntime",
    "Message",
    "MessageId",
    "MessageSource",
    "ModelSource",
    "InstructionChange",
    "InstructionsSource",
    "OtherSource",
    "UserMessageSource",
    "SubagentSettledSource",
    "SubagentReportSource",
    "JobNoticeSource",
    "PluginSource",
    "ProviderConflictError",
    "ReadOnlyToolSchemaError",
    "ReasoningBlock",
    "ReasoningDelta",
    "StreamChunk",
    "TextBlock",
    "TextDelta",
    "TokenUsage",
    "ToolCallBlock",
    "ToolCallDelta",
    "ToolResultBlock",
    "ToolResultContent",
    "ToolSource",
    "ToolSchema",
    "ToolSchemaError",
    "UsageChunk",
    "UserBlock",
    "UserMessage",
    "UserSource",
    "WireTransport",
    "decode_chunk",
    "encode_chunk",
    "error_chain",
    "plugin",
    "declare_wire_transport",
    "source_kind",
    "wire_transport",
]

_LAZY = {
    "OPENAI_CHAT": "._wire",
    "WireTransport": "._wire",
    "declare_wire_transport": "._wire",
    "wire_transport": "._wire",
    "BlockAssembler": "._assembler",
    "BlockEnd": "._chunks",
    "BlockStart": "._chunks",
    "BlockType": "._chunks",
    "FailureCode": "._chunks",
    "Finish": "._chunks",
    "FinishAborted": "._chunks",
    "FinishError": "._chunks",
    "FinishMaxTokens": "._chunks",
    "FinishReason": "._chunks",
    "FinishStop": "._chunks",
    "FinishToolCalls": "._chunks",
    "LlmFailure": "._chunks",
    "ReasoningDelta": "._chunks",
    "StreamChunk": "._chunks",
    "TextDelta": "._chunks",
    "TokenUsage": "._chunks",
    "ToolCallDelta": "._chunks",
    "UsageChunk": "._chunks",
    "decode_chunk": "._chunks",
    "encode_chunk": "._chunks",
    "AssistantBlock": "._content",
    "AssistantMessage": "._content",
    "CallId": "._content",
    "ContentBlock": "._content",
    "ImageBlock": "._content",
    "Message": "._content",
    "MessageId": "._content",
    "MessageSource": "._content",
    "ModelSource": "._content",
    "InstructionChange": "._content",
    "InstructionsSource": "._content",
    "OtherSource": "._content",
    "UserMessageSource": "._content",
    "source_kind": "._content",
    "SubagentSettledSource": "._content",
    "SubagentReportSource": "._content",
    "JobNoticeSource": "._content",
    "PluginSource": "._content",
    "ReasoningBlock": "._content",
    "TextBlock": "._content",
    "ToolCallBlock": "._content",
    "ToolResultBlock": "._content",
    "ToolResultContent": "._content",
    "ToolSource": "._content",
    "UserBlock": "._content",
    "UserMessage": "._content",
    "UserSource": "._content",
    "ChunkProtocolError": "._errors",
    "ContextWindowError": "._errors",
    "LlmCallError": "._errors",
    "ProviderConflictError": "._errors",
    "ReadOnlyToolSchemaError": "._errors",
    "ToolSchemaError": "._errors",
    "error_chain": "._errors",
    "CallConfig": "._request",
    "CallKey": "._request",
    "ContextWindowAdapter": "._request",
    "LlmAdapter": "._request",
    "LlmRequest": "._request",
    "ToolSchema": "._request",
    "LLM": "._runtime",
    "CallStream": "._runtime",
    "LlmRuntime": "._runtime",
    "plugin": "._runtime",
}
"""Where each public name lives: importing one submodule (or using one name) imports no other."""

if not TYPE_CHECKING:  # a module __getattr__ would make type checkers accept any name
    from dsh.runtime.lazy import lazy_attributes

    __getattr__ = lazy_attributes(__name__, _LAZY, globals())
    del lazy_attributes


del TYPE_CHECKING  # not a public name
