"""The subagent service and its in-process providers, `spawn` and `fork`."""

from ._in_process import DELEGATION_CONTEXT as DELEGATION_CONTEXT
from ._in_process import DESCRIPTOR_VERSION as DESCRIPTOR_VERSION
from ._in_process import ForkConfig as ForkConfig
from ._in_process import InProcessRun as InProcessRun
from ._in_process import SpawnConfig as SpawnConfig
from ._in_process import fork_plugin as fork_plugin
from ._in_process import fork_provider as fork_provider
from ._in_process import result_of as result_of
from ._in_process import spawn_plugin as spawn_plugin
from ._in_process import spawn_provider as spawn_provider
from ._service import PROVIDER_ADDED as PROVIDER_ADDED
from ._service import PROVIDER_REMOVED as PROVIDER_REMOVED
from ._service import SUBAGENTS as SUBAGENTS
from ._service import SubagentConfig as SubagentConfig
from ._service import SubagentRegistry as SubagentRegistry
from ._service import SubagentView as SubagentView
from ._service import plugin as plugin
from ._types import StopReason as StopReason
from ._types import SubagentError as SubagentError
from ._types import SubagentProvider as SubagentProvider
from ._types import SubagentRequest as SubagentRequest
from ._types import SubagentResult as SubagentResult
from ._types import SubagentRun as SubagentRun
from ._types import SubagentStart as SubagentStart

__all__ = [
    "DELEGATION_CONTEXT",
    "DESCRIPTOR_VERSION",
    "PROVIDER_ADDED",
    "PROVIDER_REMOVED",
    "SUBAGENTS",
    "ForkConfig",
    "InProcessRun",
    "SpawnConfig",
    "StopReason",
    "SubagentConfig",
    "SubagentError",
    "SubagentProvider",
    "SubagentRegistry",
    "SubagentRequest",
    "SubagentResult",
    "SubagentRun",
    "SubagentStart",
    "SubagentView",
    "fork_plugin",
    "fork_provider",
    "plugin",
    "result_of",
    "spawn_plugin",
    "spawn_provider",
]
