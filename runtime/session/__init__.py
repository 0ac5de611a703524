"""The append-only session log: wire events, the SQLite store, JSONL import/export, projection, fork and repair."""

TYPE_CHECKING = False
if TYPE_CHECKING:  # the names for type checkers; at run time each is imported on first use
    from ._errors import InvalidBoundaryError as InvalidBoundaryError
    from ._errors import LeaseLostError as LeaseLostError
    from ._errors import LogFormatError as LogFormatError
    from ._errors import LogGapError as LogGapError
    from ._errors import LogRuleError as LogRuleError
    from ._errors import OpenTurnError as OpenTurnError
    from ._errors import SessionBusyError as SessionBusyError
    from ._errors import SessionExistsError as SessionExistsError
    from ._errors import SessionInUseError as SessionInUseError
    from ._errors import SessionNotFoundError as SessionNotFoundError
    from ._errors import StoreConnectError as StoreConnectError
    from ._errors import StoreError as StoreError
    from ._errors import StoreRowError as StoreRowError
    from ._errors import StoreSchemaError as StoreSchemaError
    from ._errors import UnsupportedVersionError as UnsupportedVersionError
    from ._events import EVENT_TYPES as EVENT_TYPES
    from ._events import FORMAT_VERSION as FORMAT_VERSION
    from ._events import SURFACE_TYPES as SURFACE_TYPES
    from ._events import AbortKind as AbortKind
    from ._events import AbortReason as AbortReason
    from ._events import ApprovalAsked as ApprovalAsked
    from ._events import ApprovalAskedData as ApprovalAskedData
    from ._events import ApprovalDecided as ApprovalDecided
    from ._events import ApprovalDecidedData as ApprovalDecidedData
    from ._events import ApprovalOutcome as ApprovalOutcome
    from ._events import ApprovalPolicy as ApprovalPolicy
    from ._events import ApprovalPolicyData as ApprovalPolicyData
    from ._events import AssistantChunk as AssistantChunk
    from ._events import AssistantChunkData as AssistantChunkData
    from ._events import AssistantMessageData as AssistantMessageData
    from ._events import AssistantMessageEvent as AssistantMessageEvent
    from ._events import BracketData as BracketData
    from ._events import CommandDone as CommandDone
    from ._events import CommandDoneData as CommandDoneData
    from ._events import CommandRun as CommandRun
    from ._events import CommandRunData as CommandRunData
    from ._events import CommandSource as CommandSource
    from ._events import CompactionEnd as CompactionEnd
    from ._events import CompactionPrune as CompactionPrune
    from ._events import CompactionStart as CompactionStart
    from ._events import CompactionSummary as CompactionSummary
    from ._events import CoreEvent as CoreEvent
    from ._events import EmptyData as EmptyData
    from ._events import EpochHeader as EpochHeader
    from ._events import Event as Event
    from ._events import HeaderConfig as HeaderConfig
    from ._events import HeaderReason as HeaderReason
    from ._events import HookInvoked as HookInvoked
    from ._events import HookInvokedData as HookInvokedData
    from ._events import HookResult as HookResult
    from ._events import HookResultData as HookResultData
    from ._events import InboxSpliced as InboxSpliced
    from ._events import InboxSplicedData as InboxSplicedData
    from ._events import InboxTarget as InboxTarget
    from ._events import JobKind as JobKind
    from ._events import JobSettled as JobSettled
    from ._events import JobSettledData as JobSettledData
    from ._events import JobStarted as JobStarted
    from ._events import JobStartedData as JobStartedData
    from ._events import LlmRetry as LlmRetry
    from ._events import LlmRetryData as LlmRetryData
    from ._events import LlmRetryStarted as LlmRetryStarted
    from ._events import LlmRetryStartedData as LlmRetryStartedData
    from ._events import OpaqueEvent as OpaqueEvent
    from ._events import PermissionPreset as PermissionPreset
    from ._events import PermissionPresetData as PermissionPresetData
    from ._events import PruneData as PruneData
    from ._events import Replace as Replace
    from ._events import RequestContext as RequestContext
    from ._events import RequestContextData as RequestContextData
    from ._events import RequestHeader as RequestHeader
    from ._events import RequestHeaderData as RequestHeaderData
    from ._events import SandboxMode as SandboxMode
    from ._events import SandboxModeData as SandboxModeData
    from ._events import SessionEndSeed as SessionEndSeed
    from ._events import SessionHeader as SessionHeader
    from ._events import SessionTitle as SessionTitle
    from ._events import SessionTitleData as SessionTitleData
    from ._events import SessionTitleLlmRequest as SessionTitleLlmRequest
    from ._events import SessionTitleLlmRequestData as SessionTitleLlmRequestData
    from ._events import ShadowedRange as ShadowedRange
    from ._events import StepData as StepData
    from ._events import StepEnd as StepEnd
    from ._events import StepStart as StepStart
    from ._events import StoredEvent as StoredEvent
    from ._events import SubagentDescriptor as SubagentDescriptor
    from ._events import SubagentDescriptorData as SubagentDescriptorData
    from ._events import SummaryData as SummaryData
    from ._events import SurfaceOp as SurfaceOp
    from ._events import TitleRoute as TitleRoute
    from ._events import Todo as Todo
    from ._events import TodoWrite as TodoWrite
    from ._events import TodoWriteData as TodoWriteData
    from ._events import ToolCall as ToolCall
    from ._events import ToolCallData as ToolCallData
    from ._events import ToolResultData as ToolResultData
    from ._events import ToolResultError as ToolResultError
    from ._events import ToolResultEvent as ToolResultEvent
    from ._events import TurnEnd as TurnEnd
    from ._events import TurnEndData as TurnEndData
    from ._events import TurnEndKind as TurnEndKind
    from ._events import TurnEndReason as TurnEndReason
    from ._events import TurnStart as TurnStart
    from ._events import TurnStartData as TurnStartData
    from ._events import UserMessageEvent as UserMessageEvent
    from ._events import core_event_types as core_event_types
    from ._events import data_type as data_type
    from ._events import decode_data as decode_data
    from ._events import encode_data as encode_data
    from ._events import event_tags as event_tags
    from ._fold import LogFold as LogFold
    from ._jsonl import event_line as event_line
    from ._jsonl import export_jsonl as export_jsonl
    from ._jsonl import import_jsonl as import_jsonl
    from ._jsonl import read_jsonl as read_jsonl
    from ._jsonl import write_jsonl as write_jsonl
    from ._log import SessionLog as SessionLog
    from ._log import open_log as open_log
    from ._projection import PROJECTED_TYPES as PROJECTED_TYPES
    from ._projection import ProjectedMessage as ProjectedMessage
    from ._projection import Projection as Projection
    from ._projection import project as project
    from ._repair import closers as closers
    from ._repair import load_state as load_state
    from ._repair import resume as resume
    from ._rules import LogState as LogState
    from ._rules import SurfaceNode as SurfaceNode
    from ._services import Clock as Clock
    from ._services import CountingIds as CountingIds
    from ._services import FixedClock as FixedClock
    from ._services import IdMinter as IdMinter
    from ._services import SessionId as SessionId
    from ._services import SystemClock as SystemClock
    from ._services import UuidIds as UuidIds
    from ._stats import PRICES as PRICES
    from ._stats import CallStats as CallStats
    from ._stats import Figures as Figures
    from ._stats import Price as Price
    from ._stats import PriceTable as PriceTable
    from ._stats import SessionStats as SessionStats
    from ._stats import ToolRun as ToolRun
    from ._stats import ToolStats as ToolStats
    from ._stats import TurnStats as TurnStats
    from ._stats import fold_stats as fold_stats
    from ._stats import ordered_tools as ordered_tools
    from ._stats import session_stats as session_stats
    from ._tail import follow as follow
    from ._tail import tail_start as tail_start
    from .store._base import LEASE_TTL_MS as LEASE_TTL_MS
    from .store._base import Lease as Lease
    from .store._base import SessionInfo as SessionInfo
    from .store._base import SpawnedBy as SpawnedBy
    from .store._copy import copy_plan as copy_plan
    from .store._copy import copy_sessions as copy_sessions
    from .store._copy import own_events as own_events
    from .store._listing import SCHEMA_VERSION as SCHEMA_VERSION
    from .store._listing import SQLITE_MAGIC as SQLITE_MAGIC
    from .store._listing import STORE_TABLES as STORE_TABLES
    from .store._listing import read_listing as read_listing
    from .store._listing import read_tables as read_tables
    from .store._open import open_store as open_store
    from .store._protocol import STORE as STORE
    from .store._protocol import SessionStoreProtocol as SessionStoreProtocol
    from .store._urls import is_postgres_url as is_postgres_url
    from .store._urls import redact as redact
    from .store._urls import redact_url as redact_url
    from .store._urls import url_password as url_password
    from .store.sqlite import SessionStore as SessionStore

__all__ = [
    "AbortKind",
    "AbortReason",
    "ApprovalAsked",
    "ApprovalAskedData",
    "ApprovalDecided",
    "ApprovalDecidedData",
    "ApprovalOutcome",
    "ApprovalPolicy",
    "ApprovalPolicyData",
    "AssistantChunk",
    "AssistantChunkData",
    "AssistantMessageData",
    "AssistantMessageEvent",
    "BracketData",
    "CallStats",
    "Clock",
    "CommandDone",
    "CommandDoneData",
    "CommandRun",
    "CommandRunData",
    "CommandSource",
    "CompactionEnd",
    "CompactionPrune",
    "CompactionStart",
    "CompactionSummary",
    "CoreEvent",
    "CountingIds",
    "EVENT_TYPES",
    "EmptyData",
    "EpochHeader",
    "Event",
    "FORMAT_VERSION",
    "Figures",
    "FixedClock",
    "HeaderConfig",
    "HeaderReason",
    "HookInvoked",
    "HookInvokedData",
    "HookResult",
    "HookResultData",
    "IdMinter",
    "InboxSpliced",
    "InboxSplicedData",
    "InboxTarget",
    "InvalidBoundaryError",
    "JobKind",
    "JobSettled",
    "JobSettledData",
    "JobStarted",
    "JobStartedData",
    "LEASE_TTL_MS",
    "Lease",
    "LeaseLostError",
    "LlmRetry",
    "LlmRetryData",
    "LlmRetryStarted",
    "LlmRetryStartedData",
    "LogFold",
    "LogFormatError",
    "LogGapError",
    "LogRuleError",
    "LogState",
    "OpaqueEvent",
    "OpenTurnError",
    "PRICES",
    "PROJECTED_TYPES",
    "PermissionPreset",
    "PermissionPresetData",
    "Price",
    "PriceTable",
    "ProjectedMessage",
    "Projection",
    "PruneData",
    "Replace",
    "RequestContext",
    "RequestContextData",
    "RequestHeader",
    "RequestHeaderData",
    "SCHEMA_VERSION",
    "SQLITE_MAGIC",
    "STORE",
    "STORE_TABLES",
    "SURFACE_TYPES",
    "SandboxMode",
    "SandboxModeData",
    "SessionBusyError",
    "SessionEndSeed",
    "SessionExistsError",
    "SessionHeader",
    "SessionId",
    "SessionInUseError",
    "SessionInfo",
    "SessionLog",
    "SessionNotFoundError",
    "SessionStats",
    "SessionStore",
    "SessionStoreProtocol",
    "SessionTitle",
    "SessionTitleData",
    "SessionTitleLlmRequest",
    "SessionTitleLlmRequestData",
    "ShadowedRange",
    "SpawnedBy",
    "StepData",
    "StepEnd",
    "StepStart",
    "StoreConnectError",
    "StoreError",
    "StoreRowError",
    "StoreSchemaError",
    "StoredEvent",
    "SubagentDescriptor",
    "SubagentDescriptorData",
    "SummaryData",
    "SurfaceNode",
    "SurfaceOp",
    "SystemClock",
    "TitleRoute",
    "Todo",
    "TodoWrite",
    "TodoWriteData",
    "ToolCall",
    "ToolCallData",
    "ToolResultData",
    "ToolResultError",
    "ToolResultEvent",
    "ToolRun",
    "ToolStats",
    "TurnEnd",
    "TurnEndData",
    "TurnEndKind",
    "TurnEndReason",
    "TurnStart",
    "TurnStartData",
    "TurnStats",
    "UnsupportedVersionError",
    "UserMessageEvent",
    "UuidIds",
    "closers",
    "copy_plan",
    "copy_sessions",
    "core_event_types",
    "data_type",
    "decode_data",
    "encode_data",
    "event_line",
    "event_tags",
    "export_jsonl",
    "fold_stats",
    "follow",
    "import_jsonl",
    "is_postgres_url",
    "load_state",
    "open_log",
    "open_store",
    "ordered_tools",
    "own_events",
    "project",
    "read_jsonl",
    "read_listing",
    "read_tables",
    "redact",
    "redact_url",
    "resume",
    "session_stats",
    "tail_start",
    "url_password",
    "write_jsonl",
]

_LAZY = {
    "copy_plan": ".store._copy",
    "copy_sessions": ".store._copy",
    "own_events": ".store._copy",
    "InvalidBoundaryError": "._errors",
    "LeaseLostError": "._errors",
    "LogFormatError": "._errors",
    "LogGapError": "._errors",
    "LogRuleError": "._errors",
    "OpenTurnError": "._errors",
    "SessionBusyError": "._errors",
    "SessionExistsError": "._errors",
    "SessionInUseError": "._errors",
    "SessionNotFoundError": "._errors",
    "StoreConnectError": "._errors",
    "StoreError": "._errors",
    "StoreRowError": "._errors",
    "StoreSchemaError": "._errors",
    "UnsupportedVersionError": "._errors",
    "EVENT_TYPES": "._events",
    "FORMAT_VERSION": "._events",
    "SURFACE_TYPES": "._events",
    "AbortKind": "._events",
    "AbortReason": "._events",
    "AssistantChunk": "._events",
    "AssistantChunkData": "._events",
    "AssistantMessageEvent": "._events",
    "AssistantMessageData": "._events",
    "BracketData": "._events",
    "CompactionEnd": "._events",
    "CompactionPrune": "._events",
    "CompactionStart": "._events",
    "CompactionSummary": "._events",
    "CoreEvent": "._events",
    "EmptyData": "._events",
    "EpochHeader": "._events",
    "Event": "._events",
    "HeaderConfig": "._events",
    "HeaderReason": "._events",
    "InboxSpliced": "._events",
    "InboxSplicedData": "._events",
    "InboxTarget": "._events",
    "JobKind": "._events",
    "JobSettled": "._events",
    "JobSettledData": "._events",
    "JobStarted": "._events",
    "JobStartedData": "._events",
    "ApprovalPolicy": "._events",
    "ApprovalAsked": "._events",
    "ApprovalDecided": "._events",
    "PermissionPreset": "._events",
    "SandboxMode": "._events",
    "CommandRun": "._events",
    "CommandDone": "._events",
    "HookInvoked": "._events",
    "HookResult": "._events",
    "ApprovalPolicyData": "._events",
    "ApprovalAskedData": "._events",
    "ApprovalDecidedData": "._events",
    "PermissionPresetData": "._events",
    "SandboxModeData": "._events",
    "CommandRunData": "._events",
    "CommandDoneData": "._events",
    "HookInvokedData": "._events",
    "HookResultData": "._events",
    "ApprovalOutcome": "._events",
    "CommandSource": "._events",
    "LlmRetry": "._events",
    "LlmRetryData": "._events",
    "LlmRetryStarted": "._events",
    "LlmRetryStartedData": "._events",
    "OpaqueEvent": "._events",
    "PruneData": "._events",
    "Replace": "._events",
    "RequestContext": "._events",
    "RequestContextData": "._events",
    "RequestHeader": "._events",
    "RequestHeaderData": "._events",
    "SessionEndSeed": "._events",
    "SessionHeader": "._events",
    "SessionTitle": "._events",
    "SessionTitleData": "._events",
    "SessionTitleLlmRequest": "._events",
    "SessionTitleLlmRequestData": "._events",
    "TitleRoute": "._events",
    "ShadowedRange": "._events",
    "StepData": "._events",
    "StepEnd": "._events",
    "StepStart": "._events",
    "StoredEvent": "._events",
    "SubagentDescriptor": "._events",
    "SubagentDescriptorData": "._events",
    "SummaryData": "._events",
    "SurfaceOp": "._events",
    "Todo": "._events",
    "TodoWrite": "._events",
    "TodoWriteData": "._events",
    "ToolCall": "._events",
    "ToolCallData": "._events",
    "ToolResultEvent": "._events",
    "ToolResultData": "._events",
    "ToolResultError": "._events",
    "TurnEnd": "._events",
    "TurnEndData": "._events",
    "TurnEndKind": "._events",
    "TurnEndReason": "._events",
    "TurnStart": "._events",
    "TurnStartData": "._events",
    "UserMessageEvent": "._events",
    "core_event_types": "._events",
    "data_type": "._events",
    "event_tags": "._events",
    "decode_data": "._events",
    "encode_data": "._events",
    "event_line": "._jsonl",
    "export_jsonl": "._jsonl",
    "import_jsonl": "._jsonl",
    "read_jsonl": "._jsonl",
    "write_jsonl": "._jsonl",
    "SessionLog": "._log",
    "open_log": "._log",
    "open_store": ".store._open",
    "PROJECTED_TYPES": "._projection",
    "ProjectedMessage": "._projection",
    "Projection": "._projection",
    "project": "._projection",
    "STORE": ".store._protocol",
    "SessionStoreProtocol": ".store._protocol",
    "closers": "._repair",
    "load_state": "._repair",
    "resume": "._repair",
    "LogFold": "._fold",
    "LogState": "._rules",
    "SurfaceNode": "._rules",
    "Clock": "._services",
    "CountingIds": "._services",
    "FixedClock": "._services",
    "IdMinter": "._services",
    "SessionId": "._services",
    "SystemClock": "._services",
    "UuidIds": "._services",
    "LEASE_TTL_MS": ".store._base",
    "SCHEMA_VERSION": ".store._listing",
    "SQLITE_MAGIC": ".store._listing",
    "STORE_TABLES": ".store._listing",
    "read_listing": ".store._listing",
    "read_tables": ".store._listing",
    "Lease": ".store._base",
    "SessionInfo": ".store._base",
    "SessionStore": ".store.sqlite",
    "SpawnedBy": ".store._base",
    "PRICES": "._stats",
    "CallStats": "._stats",
    "Figures": "._stats",
    "Price": "._stats",
    "PriceTable": "._stats",
    "SessionStats": "._stats",
    "ToolRun": "._stats",
    "ToolStats": "._stats",
    "TurnStats": "._stats",
    "fold_stats": "._stats",
    "ordered_tools": "._stats",
    "session_stats": "._stats",
    "follow": "._tail",
    "is_postgres_url": ".store._urls",
    "redact": ".store._urls",
    "redact_url": ".store._urls",
    "url_password": ".store._urls",
    "tail_start": "._tail",
}
"""Where each public name lives: importing one submodule (or using one name) imports no other."""

if not TYPE_CHECKING:  # a module __getattr__ would make type checkers accept any name
    from dsh.runtime.lazy import lazy_attributes

    __getattr__ = lazy_attributes(__name__, _LAZY, globals())
    del lazy_attributes


del TYPE_CHECKING  # not a public name
