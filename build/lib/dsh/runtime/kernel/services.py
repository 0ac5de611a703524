"""Typed service keys: `TOOLS = ServiceKey[ToolRegistry]("tools")`, then `ctx.get(TOOLS)` is a `ToolRegistry`."""

from __future__ import annotations

from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

__all__ = ["Bindable", "ServiceKey"]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class ServiceKey(Generic[T]):
    """Names a service and carries its type; compared by identity, so two keys with one name still differ."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"ServiceKey({self.name!r})"


@runtime_checkable
class Bindable(Protocol[T_co]):
    """A service that hands each caller a view bound to the caller's context.

    `ctx.get(KEY)` returns `service.bind_context(ctx)` for such a service, so registrations made through the view are
    scoped like the caller and disposed when the caller's plugin unloads. `ctx.provide(KEY, service)` accepts
    a `Bindable[T]` for a `ServiceKey[T]`.
    """

    def bind_context(self, ctx: Any) -> T_co: ...
