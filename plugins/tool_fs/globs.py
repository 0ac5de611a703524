"""Glob patterns as glob and grep's `include` understand them, translated to regular expressions.

`*` and `?` stay within one path segment, `**` spans segments (`**/` also matches no directory at all), `[...]` is a
character class (`[!...]` negates) and `{a,b}` is an alternation. A pattern with no `/` matches a file's name at any
depth; one with `/` matches the file's path relative to the directory searched.

Matching never backtracks without bound. A pattern is run by Python's `re` (the fastest here, and what glob always
used) only when its shape bounds the backtracking (`linear_only`: one `*` per path part, one `**/`, few ways through
the braces). Every other pattern (`*a*a*a*...*b`, `**/` twelve times, `{a,a}{a,a}...`)
is run by RE2, whose cost is linear in the subject whatever the pattern. Both run the same translation, so they
match the same names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Protocol

import re2

from .errors import INVALID_PATTERN, FsError

__all__ = ["GlobMatcher", "linear_only", "translate"]

_MAX_RE_ALTERNATIVES = 16
"""The most ways through a pattern's braces that Python's `re` is trusted with: each is a path backtracking may
take."""

_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a refused pattern is the model's error result, not a line on dsh's stderr


class _Matcher(Protocol):
    def fullmatch(self, subject: str) -> object | None: ...


class _Re2Matcher:
    """An RE2 program matching `str` subjects (file names may carry surrogate escapes, passed through)."""

    __slots__ = ("_program",)

    def __init__(self, program: Any) -> None:
        self._program = program

    def fullmatch(self, subject: str) -> object | None:
        found: object | None = self._program.fullmatch(subject.encode("utf-8", "surrogatepass"))
        return found


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


def _ways(pattern: str) -> int:
    """How many ways through its braces `pattern` has, at most (nested braces multiply: an over-count only picks
    RE2)."""
    ways, i = 1, 0
    while i < len(pattern):
        if pattern[i] == "{":
            close, alternatives = _split_braces(pattern, i)
            if close != -1:
                ways *= sum(_ways(alternative) for alternative in alternatives) or 1
                i = close + 1
                continue
        i += 1
    return ways


def linear_only(pattern: str) -> bool:
    """Whether `pattern` must be run by RE2, because Python's `re` could backtrack on it without a small bound.

    A wildcard is a choice backtracking revisits, unless it is terminal: a `*` ending its `/`-separated part takes the
    rest of that part, and a `**` ending the pattern the rest of the path; every shorter take fails at once. `re` is
    kept when the choices cannot multiply: at most one non-terminal `*` per part (a `*` cannot pass a `/`, so the
    parts' choices lie in disjoint stretches of the path), at most one `**/` (it stops only at a `/`), a
    non-terminal `**` spanning `/` only as the one choice, no run of three stars, and at most
    `_MAX_RE_ALTERNATIVES` ways through the braces. A failed match then costs about the path's length times the
    pattern's, times the ways."""
    deep = spanning = 0
    per_part = [0]
    i, n = 0, len(pattern)
    while i < n:
        if pattern[i] == "/":
            per_part.append(0)
        if pattern[i] != "*":
            i += 1
            continue
        j = i
        while j < n and pattern[j] == "*":
            j += 1
        run, after = j - i, pattern[j : j + 1]
        if run > 2:
            return True
        if run == 2 and after == "/":
            deep += 1
        elif run == 2 and after:
            spanning += 1
        elif run == 1 and after not in ("", "/"):
            per_part[-1] += 1
        i = j
    if deep > 1 or max(per_part) > 1 or (spanning and deep + spanning + sum(per_part) > 1):
        return True
    return _ways(pattern) > _MAX_RE_ALTERNATIVES


def _compile(body: str, pattern: str, what: str) -> _Matcher:
    expression = translate(body)
    if not linear_only(body):
        try:
            return re.compile(expression, re.DOTALL)
        except re.error as error:
            raise FsError(INVALID_PATTERN, f'glob {what} "{pattern}" is invalid: {error}') from error
    try:
        return _Re2Matcher(re2.compile("(?s)" + expression, _RE2_OPTIONS))
    except re2.error as error:
        reason = error.args[0].decode("utf-8", "replace") if error.args else str(error)
    try:
        re.compile(expression, re.DOTALL)  # for its diagnosis only: compiling never backtracks
    except re.error as error:
        raise FsError(INVALID_PATTERN, f'glob {what} "{pattern}" is invalid: {error}') from error
    raise FsError(INVALID_PATTERN, f'glob {what} "{pattern}" is invalid: {reason}')


@dataclass(frozen=True)
class GlobMatcher:
    """One compiled glob: `matches(relative_path)` applies it to the name or to the relative path, as its shape
    says."""

    pattern: str
    regex: _Matcher
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
        return cls(pattern=pattern, regex=_compile(body, pattern, what), by_name="/" not in body)

    def matches(self, relative: str) -> bool:
        """`relative` is a `/`-separated path below the directory searched."""
        subject = relative.rsplit("/", 1)[-1] if self.by_name else relative
        return self.regex.fullmatch(subject) is not None
