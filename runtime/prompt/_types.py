"""The prompt's data: what plugins register (sections, contexts, variables, tool providers), what `assemble` is asked
for (`AssembleContext`) and what it returns (`PromptAssembly`). A tool's schema is the model call's own `ToolSchema`
(dsh.runtime.llm): assembly hands it to the request as it is."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import msgspec

from dsh.runtime.llm import ToolSchema

if TYPE_CHECKING:
    from dsh.runtime.kernel import Context, Scope

__all__ = [
    "AssembleContext",
    "AssembledText",
    "PromptAssembly",
    "PromptContext",
    "PromptSection",
    "TextProvider",
    "ToolProvider",
    "ToolSet",
    "VariableProvider",
]


@dataclass(frozen=True, eq=False)
class AssembleContext:
    """What one assembly is for. Every field is optional: a bare `AssembleContext()` assembles the global layer.

    - `ctx`: the (scoped) context of the agent being assembled for. Its scope selects the layers to merge, and the
      `system-prompt/assemble` waterfall runs through it, so listeners registered in that scope (or an ancestor) run
      and listeners of other scopes do not. `None` means the global layer and untagged listeners only.
    - `agent`: the agent being assembled for (a `dsh.runtime.agent.Agent`; typed `object` here, since the prompt does
      not know who assembles). Providers project their facts from it: the agent plugin's `{{model}}` is its
      `options.model` and `{{cwd}}` its workspace. `assemble_context_for(agent)` sets `ctx` to `agent.ctx`.
    - `facts`: facts stated by a caller that has no agent (`dsh prompt`: `model`, `cwd`). A provider that
      projects a fact from the agent reads `facts` only when there is no agent, so each fact has one owner in an
      assembly. The prompt service reads none of them itself.

    Compared by identity of `ctx` and `agent` and equality of `facts`. Providers must cope with any field absent.
    """

    ctx: Context | None = None
    agent: object | None = None
    facts: Mapping[str, str] = field(default_factory=dict)

    @property
    def scope(self) -> Scope | None:
        """The scope whose layers this assembly merges (`None`: the global layer only)."""
        return None if self.ctx is None else self.ctx.scope

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AssembleContext):
            return NotImplemented
        return self.ctx is other.ctx and self.agent is other.agent and dict(self.facts) == dict(other.facts)

    def __hash__(self) -> int:
        return hash((id(self.ctx), id(self.agent)))


TextProvider = Callable[[AssembleContext], str] | Callable[[], str]
"""Section or context text computed per assembly: a function of the assemble context, or of nothing."""

VariableProvider = Callable[[AssembleContext], "str | None"] | Callable[[], "str | None"]
"""A variable's value for one assembly (a function of the assemble context, or of nothing); `None` means
registered, but no value in this assembly."""


@dataclass(frozen=True)
class PromptSection:
    """A part of the system prompt. `text` is a template: `{{name}}` references are resolved at render time.

    `order` places it (identity -100, persona 0, tool guidance 100-199); `complete=True` declares it to be the whole
    system prompt (every other section is dropped after the assemble waterfall).
    """

    name: str
    order: float
    text: str | TextProvider
    complete: bool = False


@dataclass(frozen=True)
class PromptContext:
    """A runtime-context contribution: sent as a user-role snapshot message, never in the system prompt."""

    name: str
    order: float
    text: str | TextProvider


class ToolSet(msgspec.Struct, frozen=True):
    """What a tool provider returns for one assembly.

    `schemas` are the tools visible in this assembly (after any restriction); `known_names` are every name the
    provider knows before restriction (default: the schema names), used only to validate `tool_order`.
    """

    schemas: tuple[ToolSchema, ...] = ()
    known_names: tuple[str, ...] | None = None


ToolProvider = Callable[[AssembleContext], ToolSet] | Callable[[], ToolSet]
"""Supplies tool schemas per assembly (a function of the assemble context, or of nothing); the tool registry
(dsh.runtime.tools) is one."""


class AssembledText(msgspec.Struct, frozen=True):
    """A resolved section or context: its name and its text, not yet interpolated."""

    name: str
    text: str


class PromptAssembly(msgspec.Struct):
    """The result of `assemble`: fresh lists and a fresh dict the caller (and waterfall listeners) may change.

    `sections` and `contexts` are ordered and resolved but not interpolated; `tools` are ordered; `variables` maps
    every registered variable to its value for this assembly (`None`: no value). The items are immutable values
    shared between assemblies (a frozen `AssembledText`, a `ToolSchema` with read-only parameters): replace an
    item to change it.
    """

    sections: list[AssembledText] = msgspec.field(default_factory=list)
    contexts: list[AssembledText] = msgspec.field(default_factory=list)
    tools: list[ToolSchema] = msgspec.field(default_factory=list)
    variables: dict[str, str | None] = msgspec.field(default_factory=dict)
