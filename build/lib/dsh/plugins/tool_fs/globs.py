"""Glob patterns as glob and grep's `include` understand them, translated to regular expressions.

`*` and `?` stay within one path segment, `**` spans segments (`**/` also matches no directory at all), `[...]` is a
character class (`[!...]` negates) and `{a,b}` is an alternation. A pattern with no `/` matches a file's name at any
depth; one with `/` matches the file's path relative to the directory searched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import INVALID_PATTERN, FsError

__all__ = ["GlobMatcher", "translate"]


def translate(pattern: str) -> str:
    """The regular expression (without anchors) that matches what `pattern` matches."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:[^/]*/)*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            j = i + 1
            if j < n and pattern[j] in "!^":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1  # a "]" first in the class is a literal
            end = pattern.find("]", j)
            if end == -1:
                out.append(re.escape(c))
                i += 1
                continue
            body = pattern[i + 1 : end]
            negate = body[:1] in ("!", "^")
            if negate:
                body = body[1:]
            # Escape what `re` would read as set operators or a nested set (and warn about).
            body = re.sub(r"([\\\[&~|^])", r"\\\1", body)
            out.append("[" + ("^" if negate else "") + body + "]")
            i = end + 1
        elif c == "{":
            close, alternatives = _split_braces(pattern, i)
            if close == -1:
                out.append(re.escape(c))
                i += 1
                continue
            out.append("(?:" + "|".join(translate(alt) for alt in alternatives) + ")")
            i = close + 1
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


def _split_braces(pattern: str, start: int) -> tuple[int, list[str]]:
    """The index of the `}` closing the brace at `start` and its top-level alternatives; -1 if unbalanced."""
    depth, alternatives, current = 0, [], start + 1
    for j in range(start, len(pattern)):
        if pattern[j] == "{":
            depth += 1
        elif pattern[j] == "}":
            depth -= 1
            if depth == 0:
                alternatives.append(pattern[current:j])
                return j, alternatives
        elif pattern[j] == "," and depth == 1:
            alternatives.append(pattern[current:j])
            current = j + 1
    return -1, []


@dataclass(frozen=True)
class GlobMatcher:
    """One compiled glob: `matches(relative_path)` applies it to the name or to the relative path, as its shape
    says."""

    pattern: str
    regex: re.Pattern[str]
    by_name: bool

    @classmethod
    def compile(cls, pattern: str, *, what: str = "pattern") -> GlobMatcher:
        if pattern.startswith("/"):
            raise FsError(
                INVALID_PATTERN,
                f'glob {what} "{pattern}" is absolute; give a pattern relative to the directory searched and put '
                "the directory in `path`",
            )
        body = pattern[2:] if pattern.startswith("./") else pattern
        try:
            regex = re.compile(translate(body), re.DOTALL)
        except re.error as error:
            raise FsError(INVALID_PATTERN, f'glob {what} "{pattern}" is invalid: {error}') from error
        return cls(pattern=pattern, regex=regex, by_name="/" not in body)

    def matches(self, relative: str) -> bool:
        """`relative` is a `/`-separated path below the directory searched."""
        subject = relative.rsplit("/", 1)[-1] if self.by_name else relative
        return self.regex.fullmatch(subject) is not None
