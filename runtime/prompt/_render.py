"""The strict renderer: `{{name}}` interpolation, the system prompt (`render_prompt`) and the runtime-context
snapshot (`render_context_snapshot`), exactly as spec/prompt-and-subagents.md §1.10 and §1.8 say."""

from __future__ import annotations

import re
from collections.abc import Mapping

from runtime.kernel.errors import PromptRenderError

from ._types import PromptAssembly

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


def _interpolate(text: str, variables: Mapping[str, str | None], *, name: str, kind: str) -> str:
    if not isinstance(text, str):
        raise TypeError(f'{kind} "{name}" text must be a string, got {type(text).__name__}')
    opener = text.find("{{")
    if opener < 0:
        return text
    where = f'{kind} "{name}"'
    parts: list[str] = []
    last = 0
    while opener >= 0:
        group = _GROUP.match(text, opener)
        if group is None:
            if text.find("}}", opener + 2) >= 0:
                raise PromptRenderError(
                    f'malformed prompt variable reference at "{text[opener : opener + _EXCERPT]}…" in {where} '
                    "(references are complete simple {{name}} groups)",
                    section=name,
                )
            # A lone "{{" with no "}}" after it is prose.
            parts.append(text[last : opener + 2])
            last = opener + 2
        else:
            ref = group.group(1)
            if VARIABLE_NAME.fullmatch(ref) is None:
                raise PromptRenderError(
                    f'malformed prompt variable reference "{{{{{ref}}}}}" in {where} '
                    "(variable names match /^[a-z][a-z0-9_]*$/)",
                    section=name,
                )
            if ref not in variables:
                registered = ", ".join(variables) or "(none)"
                raise PromptRenderError(
                    f'unknown prompt variable "{{{{{ref}}}}}" in {where}; registered variables: {registered}',
                    section=name,
                    variable=ref,
                )
            value = variables[ref]
            if value is None:
                raise PromptRenderError(
                    f'prompt variable "{{{{{ref}}}}}" has no value for this assembly ({where})',
                    section=name,
                    variable=ref,
                )
            if not isinstance(value, str):
                raise TypeError(
                    f'prompt variable "{{{{{ref}}}}}" must be a string or None, got {type(value).__name__} '
                    f"({where})"
                )
            parts.append(text[last:opener])
            parts.append(value)
            last = group.end()
        opener = text.find("{{", last)
    parts.append(text[last:])
    return "".join(parts)


def render_prompt(assembly: PromptAssembly) -> str:
    """The system prompt: each section interpolated on its own, empty results dropped, joined by a blank line."""
    rendered = [
        text
        for section in assembly.sections
        if (text := _interpolate(section.text, assembly.variables, name=section.name, kind="section"))
    ]
    return "\n\n".join(rendered)


def render_context_sections(assembly: PromptAssembly) -> list[str]:
    """Each runtime context interpolated with the same strict rules (errors say `context "<name>"`); empty ones
    dropped."""
    return [
        text
        for context in assembly.contexts
        if (text := _interpolate(context.text, assembly.variables, name=context.name, kind="context"))
    ]


def render_context_snapshot(assembly: PromptAssembly) -> str:
    """The runtime-context message: `""` when no context renders, else the header and the texts, blank-line joined."""
    texts = render_context_sections(assembly)
    if not texts:
        return ""
    return "\n\n".join([CONTEXT_SNAPSHOT_HEADER, *texts])
