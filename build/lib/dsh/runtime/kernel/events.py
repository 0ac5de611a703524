"""Event declarations: an event is declared once by its owner, with its mode in its type.

`Emit` events call every listener and contain each listener's failure; `Waterfall` events thread a value through
listeners as middleware, and a listener's failure propagates.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

__all__ = ["Emit", "Event", "Next", "Waterfall"]

V = TypeVar("V")
A = TypeVar("A")

Next = Callable[[V], Awaitable[V]]


class Event:
    """Base of event declarations; `name` is an `owner/fact` string."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        owner, sep, fact = name.partition("/")
        if not (owner and sep and fact):
            raise ValueError(f'event name "{name}" must be "owner/fact"')
        self.name = name

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class Emit(Event, Generic[A]):
    """A notification. Listeners: `async def listener(*args) -> None`. `A` documents the argument type."""

    __slots__ = ()


class Waterfall(Event, Generic[V, A]):
    """A middleware chain. Listeners: `async def listener(value: V, *args, next) -> V`.

    Each listener may call `await next(value)` to run the rest of the chain (and post-process its result), or return
    without calling it to own the decision. With no listeners, the value comes back unchanged.
    """

    __slots__ = ()


EmitListener = Callable[..., Awaitable[None]]
WaterfallListener = Callable[..., Awaitable[Any]]
