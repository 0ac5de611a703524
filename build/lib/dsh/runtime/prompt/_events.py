"""The prompt's events, declared once here: `system-prompt/change` (Emit) and `system-prompt/assemble` (Waterfall)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from dsh.runtime.kernel import Emit, Scope, Waterfall

from ._types import AssembleContext, PromptAssembly

__all__ = ["ASSEMBLE", "CHANGE", "ChangeKind", "PromptChange"]

ChangeKind = Literal["section", "context", "variable", "tools", "suppress-runtime-context"]


@dataclass(frozen=True)
class PromptChange:
    """One registration (`registered=True`) or disposal (`False`) in the layer of `scope` (`None`: global).

    `name` is the section, context or variable name; `None` for the anonymous kinds (tools, suppressors).
    """

    kind: ChangeKind
    name: str | None
    scope: Scope | None
    registered: bool


CHANGE = Emit[PromptChange]("system-prompt/change")
"""Fired once per registration and once per disposal, through the registering context (so scoped listeners hear
only their scope). Listeners run synchronously inside the registration: they must not suspend."""

ASSEMBLE = Waterfall[PromptAssembly, AssembleContext]("system-prompt/assemble")
"""Runs after ordering: `async def listener(assembly, context, next)`. Mutate and call `next`, post-process what
`next` returns, or return an assembly without calling it. Nothing a listener adds is re-sorted."""
