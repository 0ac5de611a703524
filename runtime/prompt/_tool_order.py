"""Tool ordering: lexicographic by name by default, or the configured `tool_order` with its rest entry
(spec/prompt-and-subagents.md §1.9)."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Collection, Sequence
from operator import attrgetter

from dsh.runtime.llm import ToolSchema

from ._errors import ToolOrderError

__all__ = ["TOOL_ORDER_REST", "check_tool_order", "order_tools"]

TOOL_ORDER_REST = "<unlisted-tools>"
"""The `tool_order` entry where every tool it does not list is inserted (in name order)."""

_name = attrgetter("name")


def check_tool_order(tool_order: Sequence[str]) -> None:
    """Refuse a `tool_order` that lists a name twice or lacks exactly one rest entry (checked at config load)."""
    seen: set[str] = set()
    for name in tool_order:
        if name in seen:
            raise ValueError(f'tool_order lists "{name}" more than once')
        seen.add(name)
    if TOOL_ORDER_REST not in seen:
        raise ValueError(
            f'tool_order must contain the "{TOOL_ORDER_REST}" rest entry (where unlisted tools are inserted)'
        )


def order_tools(
    schemas: Sequence[ToolSchema], known_names: Collection[str], tool_order: Sequence[str] | None
) -> list[ToolSchema]:
    """`schemas` ordered by name (code points), or placed by `tool_order`: listed tools at their slots, unlisted
    ones at the rest entry. A listed name that is known but not visible here is simply absent. `known_names` need
    not repeat the schemas' names."""
    by_name = sorted(schemas, key=_name)
    # by_name is sorted, so a schema with the reserved name would be where bisect places it.
    at = bisect_left(by_name, TOOL_ORDER_REST, key=_name)
    if (at < len(by_name) and by_name[at].name == TOOL_ORDER_REST) or TOOL_ORDER_REST in known_names:
        raise ToolOrderError(
            f'tool provider returned reserved tool name "{TOOL_ORDER_REST}" (reserved for tool_order\'s '
            "rest entry)"
        )
    if tool_order is None:
        return by_name
    known = set(known_names)
    known.update(map(_name, schemas))
    unknown = tuple(name for name in tool_order if name != TOOL_ORDER_REST and name not in known)
    if unknown:
        listing = ", ".join(sorted(known)) or "(none)"
        plural = "s" if len(unknown) > 1 else ""
        quoted = ", ".join(f'"{name}"' for name in unknown)
        raise ToolOrderError(
            f"tool_order lists unregistered tool{plural} {quoted}; known tools: {listing}", unknown=unknown
        )
    listed = set(tool_order)
    slots: dict[str, list[ToolSchema]] = {}
    rest: list[ToolSchema] = []
    for schema in by_name:
        if schema.name in listed:
            slots.setdefault(schema.name, []).append(schema)
        else:
            rest.append(schema)
    ordered: list[ToolSchema] = []
    for name in tool_order:
        ordered.extend(rest if name == TOOL_ORDER_REST else slots.get(name, ()))
    return ordered
