"""Disposers and the effect stack that undoes a plugin's (or a scope's) registrations in reverse order."""

from __future__ import annotations

import logging
from collections.abc import Callable

__all__ = ["Disposer", "EffectStack"]

log = logging.getLogger("dsh.kernel")


class Disposer:
    """Undoes one registration. Calling it twice is harmless; it also leaves the stack that holds it."""

    __slots__ = ("_stack", "_undo")

    def __init__(self, undo: Callable[[], None], stack: EffectStack | None = None) -> None:
        self._undo: Callable[[], None] | None = undo
        self._stack = stack

    @property
    def disposed(self) -> bool:
        return self._undo is None

    def __call__(self) -> None:
        undo, self._undo = self._undo, None
        if undo is None:
            return
        if self._stack is not None:
            self._stack._forget(self)
        undo()


class EffectStack:
    """Holds the disposers of one owner (a loaded plugin or a scope) and runs them last-in, first-out."""

    __slots__ = ("_disposers", "closed", "owner")

    def __init__(self, owner: str) -> None:
        self.owner = owner
        self._disposers: list[Disposer] = []
        self.closed = False

    def push(self, undo: Callable[[], None]) -> Disposer:
        if self.closed:
            raise RuntimeError(f'"{self.owner}" is disposed; it cannot register anything more')
        disposer = Disposer(undo, self)
        self._disposers.append(disposer)
        return disposer

    def _forget(self, disposer: Disposer) -> None:
        # Identity, not equality: a disposer leaves the stack at most once.
        for i in range(len(self._disposers) - 1, -1, -1):
            if self._disposers[i] is disposer:
                del self._disposers[i]
                return

    def __len__(self) -> int:
        return len(self._disposers)

    def close(self) -> None:
        """Run every disposer in reverse order. One that raises is logged; the rest still run."""
        self.closed = True
        while self._disposers:
            disposer = self._disposers[-1]
            try:
                disposer()
            except Exception:
                # Unloading must finish: a failed undo is reported, and the remaining effects still run.
                log.exception('disposing an effect of "%s" failed', self.owner)
