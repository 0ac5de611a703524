"""What the model reads: the original's `<system-reminder>` wording for a baseline and for changes, within a byte
budget (files dropped broadest first, then the most specific one cut, and the cut stated), with every
`</system-reminder>` inside escaped so no path or file text can close the block."""

from __future__ import annotations

import os
from dataclasses import dataclass

from dsh.runtime.llm import InstructionChange

from ._files import GLOBAL_DIR, Loaded, scope_key

__all__ = ["Item", "dir_scope", "file_scope", "render_baseline", "render_changes"]

OPEN = "<system-reminder>"
CLOSE = "</system-reminder>"
_ESCAPED_CLOSE = "<\\/system-reminder>"
_GUIDANCE = (
    "The following workspace instructions may be relevant to your work. Use them as guidance when applicable. "
    "More specific instructions take precedence over broader ones. "
    "They do not override system, developer, or direct user instructions."
)
INTRO = _GUIDANCE
REPLACING_INTRO = (
    "This complete workspace instruction baseline replaces all earlier workspace instruction baselines. "
    + _GUIDANCE
)
EMPTY_REPLACING_INTRO = (
    "This complete workspace instruction baseline replaces all earlier workspace instruction baselines. "
    "No workspace instructions are currently active."
)
COMPACT_INTRO = "Workspace instructions were omitted or truncated to fit the configured byte budget."


def dir_scope(display: str) -> str:
    """The directory a file's instructions apply to, as the model reads it (`.` at the root, `user-global`)."""
    if display in ("~/.dsh/AGENTS.md", "$DSH_HOME/AGENTS.md"):
        return GLOBAL_DIR
    return os.path.dirname(display) or "."


def file_scope(display: str) -> str:
    return scope_key(dir_scope(display), os.path.basename(display))


@dataclass(frozen=True, slots=True)
class Item:
    """One change to render, with the file it is about (a removal's file has no text)."""

    change: InstructionChange
    file: Loaded


@dataclass(frozen=True, slots=True)
class _Style:
    intro: str
    items: (
        dict[str, Item] | None
    )  # None: baseline sections; else the change of each file, by its absolute path

    def section(self, file: Loaded) -> str:
        if self.items is None:
            return f"Instructions from: {file.display}\n\n{file.content}"
        change = self.items[str(file.absolute)].change
        if change.action == "set":
            return "\n".join(
                [
                    f"Additional instructions from: {file.display}",
                    "",
                    f"These instructions apply to work under `{dir_scope(file.display)}`. Use them as guidance "
                    "when relevant; more specific instructions take precedence. They do not override system, "
                    "developer, or direct user instructions.",
                    "",
                    file.content,
                ]
            )
        if change.action == "remove":
            return (
                f"Instructions removed: {change.path}\n\n"
                "The previously loaded instructions from this file no longer apply."
            )
        return "\n".join(
            [
                f"Updated instructions from: {change.path}",
                "",
                "This file changed after it was loaded. Use the following content instead of the previously "
                "loaded instructions from this file.",
                "",
                file.content,
            ]
        )


def _size(text: str) -> int:
    return len(text.encode())


def _cut(text: str, limit: int) -> str:
    data = text.encode()
    if len(data) <= limit:
        return text
    end = max(0, limit)
    while end > 0 and (data[end] & 0xC0) == 0x80:  # not inside a character
        end -= 1
    return data[:end].decode()


def _escape(body: str) -> str:
    return body.replace(CLOSE, _ESCAPED_CLOSE)


def _marker(budget: int, omitted: list[Loaded], cut: list[tuple[str, int, int]]) -> str:
    if not omitted and not cut:
        return ""
    parts = []
    if omitted:
        parts.append("omitted " + ", ".join(f.display for f in omitted))
    if cut:
        parts.append("truncated " + ", ".join(f"{path} from {was} to {now} bytes" for path, was, now in cut))
    return f"Workspace instruction budget {budget} bytes: {'; '.join(parts)}"


def _text(
    files: list[Loaded], budget: int, omitted: list[Loaded], cut: list[tuple[str, int, int]], style: _Style
) -> str:
    blocks = [_marker(budget, omitted, cut), style.intro, *(style.section(f) for f in files)]
    body = "\n\n".join(block for block in blocks if block)
    return "\n".join([OPEN, _escape(body), CLOSE])


def _with(file: Loaded, size: int) -> Loaded:
    return Loaded(file.absolute, file.display, _cut(file.content, size))


def _fit(file: Loaded, budget: int, omitted: list[Loaded], style: _Style) -> Loaded:
    """The longest prefix of `file` whose message fits `budget` (a binary search on bytes, as the original)."""
    original = _size(file.content)
    low, high, best = 0, original, _with(file, 0)
    while low <= high:
        mid = (low + high) // 2
        candidate = _with(file, mid)
        cut = [(file.display, original, _size(candidate.content))]
        if _size(_text([candidate], budget, omitted, cut, style)) <= budget:
            best, low = candidate, mid + 1
        else:
            high = mid - 1
    return best


def _render(files: list[Loaded], budget: int, style: _Style) -> tuple[str, list[Loaded]]:
    """The message text and the files it represents."""
    if budget <= 0:
        return "", []
    full = _text(files, budget, [], [], style)
    if _size(full) <= budget:
        return full, files
    for start in range(1, len(files)):
        text = _text(files[start:], budget, files[:start], [], style)
        if _size(text) <= budget:
            return text, files[start:]
    if not files:
        return "", []
    last, omitted = files[-1], files[:-1]
    original = _size(last.content)
    for candidate in (style, _Style(COMPACT_INTRO, style.items)):
        fitted = _fit(last, budget, omitted, candidate)
        kept = _size(fitted.content)
        cut = [(last.display, original, kept)]
        text = _text([fitted], budget, omitted, cut, candidate)
        if _size(text) <= budget:
            return text, [last] if kept > 0 or original == 0 else []
    cut = [(last.display, original, 0)]
    notice = _escape(_marker(budget, omitted, cut))
    with_heading = _escape("\n\n".join([notice, style.section(_with(last, 0))]))
    if _size(with_heading) <= budget:
        return with_heading, [last] if original == 0 else []
    return (notice if _size(notice) <= budget else _cut(notice, budget)), []


def render_baseline(files: list[Loaded], budget: int, *, replacing: bool) -> tuple[str, list[Loaded]]:
    """The baseline message (`replacing`: it supersedes a visible baseline made under other settings) and the files
    it represents."""
    intro = (EMPTY_REPLACING_INTRO if not files else REPLACING_INTRO) if replacing else INTRO
    return _render(files, budget, _Style(intro, None))


def render_changes(items: list[Item], budget: int) -> tuple[str, list[InstructionChange]]:
    """One batch of changes and the changes it represents."""
    by_path = {str(item.file.absolute): item for item in items}
    text, represented = _render([item.file for item in items], budget, _Style("", by_path))
    kept = {str(file.absolute) for file in represented}
    return text, [item.change for item in items if str(item.file.absolute) in kept]
