"""The strict renderer: `{{name}}` interpolation, the system prompt (`render_prompt`) and the runtime-context
snapshot (`render_context_snapshot`), exactly as spec/prompt-and-subagents.md §1.10 and §1.8 say."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from runtime.kernel.errors import PromptRenderError

from ._types import AssembledText, PromptAssembly

__all__ = [
    "CONTEXT_SNAPSHOT_HEADER",
    "CONTEXT_SNAPSHOT_NONE",
    "VARIABLE_NAME",
    "interpolate",
    "render_context_sections",
    "render_context_snapshot",
    "render_prompt",
]

VARIABLE_NAME = re.compile(r"[a-z][a-z0-9_]*")
"""What a variable name must fully match (ASCII only)."""

CONTEXT_SNAPSHOT_HEADER = (
    "Current runtime context. This snapshot supersedes earlier runtime-context snapshots."
)
CONTEXT_SNAPSHOT_NONE = "Current runtime context: none. Earlier runtime-context snapshots no longer apply."
"""The marker the agent loop sends when the active contexts became empty after a snapshot was sent."""

# A reference group: "{{", a run without braces (newlines included), "}}".
_GROUP = re.compile(r"\{\{([^{}]*)\}\}")
_EXCERPT = 16


def interpolate(text: str, variables: Mapping[str, str | None], *, section: str) -> str:
    """Replace every `{{name}}` in `text` with its value; raise `PromptRenderError` naming `section` on the first
    unknown, valueless, malformed or unbalanced reference from the left. Values are never re-scanned."""
    return _interpolate(text, variables, name=section, kind="section")


class _Template(NamedTuple):
    """A text scanned once: `head`, then each reference's name with the literal that follows it, then the static
    problem (if any) the scan stopped at, raised only once every reference before it has been checked.

    `parts` and `names` are the same for the fast path of a text with no problem: the literals with a slot after
    each but the last (`parts[1::2]` are the slots), and the names that fill the slots."""

    head: str
    refs: tuple[tuple[str, str], ...]
    malformed: tuple[str, str] | None  # ("group", name) or ("opener", excerpt)
    parts: tuple[str, ...]
    names: tuple[str, ...]


_TEMPLATES: dict[str, _Template] = {}
_MAX_TEMPLATES = 256


def _template(text: str) -> _Template:
    """`_compile(text)`, kept for the next render of the same text: most sections are the same strings every step.
    Bounded (cleared when full), since provider texts may differ every time."""
    template = _TEMPLATES.get(text)
    if template is None:
        if len(_TEMPLATES) >= _MAX_TEMPLATES:
            _TEMPLATES.clear()
        template = _TEMPLATES[text] = _compile(text)
    return template


def _compile(text: str) -> _Template:
    """The scan of spec §1.10 without the variables: everything that depends only on the text."""
    literals: list[str] = []  # one more than names: the text before, between and after the references
    names: list[str] = []
    piece: list[str] = []  # the current literal, in pieces (a lone "{{" is prose and stays in it)
    malformed: tuple[str, str] | None = None
    last = 0
    opener = text.find("{{")
    while opener >= 0:
        group = _GROUP.match(text, opener)
        if group is None:
            if text.find("}}", opener + 2) >= 0:
                malformed = ("opener", text[opener : opener + _EXCERPT])
                break
            piece.append(text[last : opener + 2])
            last = opener + 2
        else:
            ref = group.group(1)
            if VARIABLE_NAME.fullmatch(ref) is None:
                malformed = ("group", ref)
                break
            piece.append(text[last:opener])
            literals.append("".join(piece))
            names.append(ref)
            piece = []
            last = group.end()
        opener = text.find("{{", last)
    piece.append(text[last:])
    literals.append("".join(piece))
    parts: list[str] = [literals[0]]
    for literal in literals[1:]:
        parts += ("", literal)
    return _Template(
        literals[0], tuple(zip(names, literals[1:], strict=True)), malformed, tuple(parts), tuple(names)
    )


def _interpolate(text: str, variables: Mapping[str, str | None], *, name: str, kind: str) -> str:
    if not isinstance(text, str):
        raise TypeError(f'{kind} "{name}" text must be a string, got {type(text).__name__}')
    if "{{" not in text:
        return text
    template = _template(text)
    if template.malformed is None:
        # The common case, every reference known and valued: fill the slots and join. Any problem (a KeyError,
        # or the join's TypeError for a None or non-string value) takes the checking path below, which raises the
        # first problem from the left exactly as the spec scan does.
        try:
            filled: list[Any] = list(template.parts)
            filled[1::2] = [variables[ref] for ref in template.names]
            return "".join(filled)  # a None is the join's TypeError, handled below
        except (KeyError, TypeError):
            pass
    parts = [template.head]
    for ref, literal in template.refs:
        if ref not in variables:
            registered = ", ".join(variables) or "(none)"
            raise PromptRenderError(
                f'unknown prompt variable "{{{{{ref}}}}}" in {kind} "{name}"; registered variables: {registered}',
                section=name,
                variable=ref,
            )
        value = variables[ref]
        if not isinstance(value, str):
            if value is None:
                raise PromptRenderError(
                    f'prompt variable "{{{{{ref}}}}}" has no value for this assembly ({kind} "{name}")',
                    section=name,
                    variable=ref,
                )
            raise TypeError(
                f'prompt variable "{{{{{ref}}}}}" must be a string or None, got {type(value).__name__} '
                f'({kind} "{name}")'
            )
        parts.append(value)
        parts.append(literal)
    if template.malformed is not None:
        what, detail = template.malformed
        if what == "opener":
            raise PromptRenderError(
                f'malformed prompt variable reference at "{detail}…" in {kind} "{name}" '
                "(references are complete simple {{name}} groups)",
                section=name,
            )
        raise PromptRenderError(
            f'malformed prompt variable reference "{{{{{detail}}}}}" in {kind} "{name}" '
            "(variable names match /^[a-z][a-z0-9_]*$/)",
            section=name,
        )
    return "".join(parts)


_Rendered = tuple[tuple[AssembledText, ...], dict[str, str | None], tuple[str, ...]]
"""One successful render: the texts (an immutable tuple of frozen `AssembledText`s), a copy of the variables, and
what they rendered to (empty results already dropped)."""

_LAST: dict[str, _Rendered] = {}
"""The last successful render of each kind (section, context), replaced whole (one reference swap, so a reader in
another thread never pairs one render's input with another's output).

A render is a pure function of its texts and variables, and the agent loop renders the same prompt step after step,
so an equal input returns the last output instead of interpolating every section again. Equal, not only identical:
the tuple compares the `AssembledText`s by identity first, then by name and text, and the variables by value, so a
listener's edit, a new value or another agent's prompt is simply a miss. Failures are never kept."""


def _render_all(entries: list[AssembledText], variables: dict[str, str | None], kind: str) -> list[str]:
    """Each text interpolated on its own, empty results dropped (a fresh list)."""
    texts = tuple(entries)
    last = _LAST.get(kind)
    if last is not None and texts == last[0] and variables == last[1]:
        return list(last[2])
    rendered: list[str] = []
    frozen = True  # every entry an AssembledText (frozen), so the key cannot change once kept
    for entry in texts:
        if type(entry) is not AssembledText:
            frozen = False
        text = entry.text
        if type(text) is not str or "{" in text:  # the common static text skips the call (one memchr)
            text = _interpolate(text, variables, name=entry.name, kind=kind)
        if text:
            rendered.append(text)
    if frozen:
        _LAST[kind] = (texts, dict(variables), tuple(rendered))
    return rendered


def render_prompt(assembly: PromptAssembly) -> str:
    """The system prompt: each section interpolated on its own, empty results dropped, joined by a blank line."""
    return "\n\n".join(_render_all(assembly.sections, assembly.variables, "section"))


def render_context_sections(assembly: PromptAssembly) -> list[str]:
    """Each runtime context interpolated with the same strict rules (errors say `context "<name>"`); empty ones
    dropped."""
    if not assembly.contexts:
        return []
    return _render_all(assembly.contexts, assembly.variables, "context")


def render_context_snapshot(assembly: PromptAssembly) -> str:
    """The runtime-context message: `""` when no context renders, else the header and the texts, blank-line joined."""
    texts = render_context_sections(assembly)
    if not texts:
        return ""
    return "\n\n".join([CONTEXT_SNAPSHOT_HEADER, *texts])
