"""The strict renderer: `{{name}}` interpolation, the system prompt (`render_prompt`) and the runtime-context
snapshot (`render_context_snapshot`), exactly as spec/prompt-and-subagents.md §1.10 and §1.8 say."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from dsh.runtime.kernel.errors import PromptRenderError

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


def _render_each(texts: tuple[AssembledText, ...], variables: dict[str, str | None], kind: str) -> list[str]:
    """Each text interpolated on its own (raising the first problem, text by text), empty results dropped."""
    rendered: list[str] = []
    for entry in texts:
        text = entry.text
        if type(text) is not str or "{" in text:  # the common static text skips the call (one memchr)
            text = _interpolate(text, variables, name=entry.name, kind=kind)
        if text:
            rendered.append(text)
    return rendered


class _Joined(NamedTuple):
    """A system prompt's sections as one template: `parts` are the literals (the static sections and the blank
    lines between sections included) with a slot after each but the last, `names` the variables that fill the
    slots, so a render is one fill and one join, as a hand-written assembler would do it. `parts` is None when the
    sections cannot be joined in advance: a text with a problem to raise, or one that may render empty (no literal
    of its own, so whether it is dropped depends on the values); those render section by section."""

    texts: tuple[AssembledText, ...]
    parts: tuple[str, ...] | None
    names: tuple[str, ...]


def _join(texts: tuple[AssembledText, ...]) -> _Joined | None:
    """The joined template of `texts`; None when an entry is not an `AssembledText` (only frozen values are kept)."""
    parts: list[str] = []
    names: list[str] = []
    literal: list[str] = []  # the pieces of the literal being built
    for entry in texts:
        if type(entry) is not AssembledText:
            return None
        text = entry.text
        if type(text) is not str:
            return _Joined(texts, None, ())
        refs: tuple[tuple[str, str], ...] = ()
        if "{{" not in text:
            if not text:
                continue  # dropped at render
            head = text
        else:
            template = _template(text)
            if template.malformed is not None or not any(template.parts[0::2]):
                return _Joined(texts, None, ())
            head, refs = template.head, template.refs
        if literal or parts:
            literal.append("\n\n")
        literal.append(head)
        for name, after in refs:
            parts += ("".join(literal), "")
            names.append(name)
            literal = [after]
    parts.append("".join(literal))
    return _Joined(texts, tuple(parts), tuple(names))


class _LastPrompt(NamedTuple):
    """The last successful `render_prompt`: its sections joined, a copy of its variables, its output."""

    joined: _Joined
    variables: dict[str, str | None]
    output: str


_LAST_PROMPT: list[_LastPrompt | None] = [None]
_LAST_CONTEXTS: list[tuple[tuple[AssembledText, ...], dict[str, str | None], tuple[str, ...]] | None] = [None]
"""The last successful render of each kind, each replaced whole (one reference swap, so a reader in another
thread never pairs one render's input with another's output).

A render is a pure function of its texts and variables, and the agent loop renders the same prompt step after step:
equal texts reuse their joined template, and equal variables too return the last output. Equal, not only identical:
the tuples compare the frozen `AssembledText`s by identity first, then by name and text, and the variables by value,
so a listener's edit, a new value or another agent's prompt is simply a miss. Failures are never kept."""


def render_prompt(assembly: PromptAssembly) -> str:
    """The system prompt: each section interpolated on its own, empty results dropped, joined by a blank line."""
    texts = tuple(assembly.sections)
    variables = assembly.variables
    last = _LAST_PROMPT[0]
    if last is not None and texts == last.joined.texts:
        if variables == last.variables:
            return last.output
        joined: _Joined | None = last.joined
    else:
        joined = _join(texts)
    output = None
    if joined is not None and joined.parts is not None:
        try:
            filled: list[Any] = list(joined.parts)
            filled[1::2] = [variables[name] for name in joined.names]
            output = "".join(filled)
        except (KeyError, TypeError):
            pass  # an unknown, valueless or non-string reference: rendered section by section, which raises it
    if output is None:
        output = "\n\n".join(_render_each(texts, variables, "section"))
    if joined is not None:
        _LAST_PROMPT[0] = _LastPrompt(joined, dict(variables), output)
    return output


def render_context_sections(assembly: PromptAssembly) -> list[str]:
    """Each runtime context interpolated with the same strict rules (errors say `context "<name>"`); empty ones
    dropped."""
    if not assembly.contexts:
        return []
    texts = tuple(assembly.contexts)
    variables = assembly.variables
    last = _LAST_CONTEXTS[0]
    if last is not None and texts == last[0] and variables == last[1]:
        return list(last[2])
    rendered = _render_each(texts, variables, "context")
    if all(type(entry) is AssembledText for entry in texts):  # frozen, so the kept input cannot change
        _LAST_CONTEXTS[0] = (texts, dict(variables), tuple(rendered))
    return rendered


def render_context_snapshot(assembly: PromptAssembly) -> str:
    """The runtime-context message: `""` when no context renders, else the header and the texts, blank-line joined."""
    texts = render_context_sections(assembly)
    if not texts:
        return ""
    return "\n\n".join([CONTEXT_SNAPSHOT_HEADER, *texts])
