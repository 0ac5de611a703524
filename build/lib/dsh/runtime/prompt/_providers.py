"""How the assembler calls a provider: its signature read once, at registration (the assemble context, or nothing;
anything else refused, naming the entry), and whatever it raises during an assembly named as the prompt's own
error."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from ._errors import PromptProviderError, ProviderSignatureError
from ._types import AssembleContext

__all__ = ["label", "raised", "with_context"]


def with_context(
    provider: Callable[..., Any], kind: str, name: str, what: str
) -> Callable[[AssembleContext], Any]:
    """`provider` as the assembler calls it, with the assemble context: as is when it takes one argument, wrapped
    when it takes none (the RFC keeps zero-argument providers valid). Any other signature is refused here, at
    registration, naming `what`, rather than failing every assembly later."""
    try:
        signature = inspect.signature(provider)
    except (TypeError, ValueError):
        # No signature to read (some builtins and extension callables): called the documented way, with the
        # context; a mismatch then fails the assembly as a PromptProviderError naming the entry.
        return provider
    try:
        signature.bind(None)
    except TypeError:
        pass
    else:
        return provider
    try:
        signature.bind()
    except TypeError:
        raise ProviderSignatureError(
            f"{what} must take the assemble context (one positional argument) or nothing; its signature is "
            f"{signature}",
            kind=kind,
            name=name,
        ) from None

    def without_context(context: AssembleContext) -> Any:
        return provider()

    return without_context


def label(provider: object) -> str:
    """An anonymous provider's name for errors: its module and qualified name."""
    qualname = getattr(provider, "__qualname__", None) or type(provider).__qualname__
    module = getattr(provider, "__module__", None) or type(provider).__module__
    return f"{module}.{qualname}" if module else str(qualname)


def raised(what: str, error: Exception, kind: str, name: str) -> PromptProviderError:
    return PromptProviderError(f"{what} raised {type(error).__name__}: {error}", kind=kind, name=name)
