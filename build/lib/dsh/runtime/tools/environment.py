"""What a tool's subprocess inherits of dsh's environment: the `ToolEnvironment` service, where plugins name the
variables that hold their secrets (a provider's API key), and the policy that builds a child's environment without
them, without anything whose name looks like a credential, and with a deployment's own allow and deny lists."""

from __future__ import annotations

import fnmatch
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from dsh.runtime.kernel import Context, Disposer, ServiceKey

__all__ = ["CREDENTIAL_PATTERNS", "TOOL_ENV", "EnvPolicy", "ToolEnvironment"]

CREDENTIAL_PATTERNS: tuple[str, ...] = (
    "*API_KEY*",
    "*APIKEY*",
    "*_KEY",
    "*_KEY_ID",
    "*ACCESS_KEY*",
    "*PRIVATE_KEY*",
    "*SECRET*",
    "*TOKEN",
    "*_TOKEN_*",
    "*PASSWORD*",
    "*PASSWD*",
    "*PASSPHRASE*",
    "*CREDENTIAL*",
    "*_AUTH",
    "*_AUTH_*",
    "*COOKIE*",
    "*SESSION_KEY*",
)
"""Names (matched case-insensitively, shell-glob style) that look like credentials and are withheld by default:
`OPENAI_API_KEY`, `GITHUB_TOKEN`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `PGPASSWORD`, `NPM_CONFIG__AUTH`,
`GOOGLE_APPLICATION_CREDENTIALS`, ..."""

_MIN_SECRET_CHARS = 8
"""Shorter withheld values (`1`, `true`) are too common to withhold every other variable that equals them."""

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class EnvPolicy:
    """A deployment's additions to the default: `allow` keeps names the credential patterns would withhold,
    `deny` withholds more. Both hold names or shell-glob patterns, matched case-insensitively. A variable a plugin
    declared secret is withheld whatever `allow` says; `deny` wins over `allow`."""

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for field_name in ("allow", "deny"):
            for entry in getattr(self, field_name):
                if not entry or not _NAME.fullmatch(entry.replace("*", "A").replace("?", "A")):
                    raise ValueError(
                        f'env.{field_name}: "{entry}" is not a variable name or a pattern of one (letters, digits, '
                        '"_", with "*" and "?" as wildcards)'
                    )


def _matches(name: str, patterns: Iterable[str]) -> bool:
    upper = name.upper()
    return any(fnmatch.fnmatchcase(upper, pattern.upper()) for pattern in patterns)


class ToolEnvironment:
    """The names of the environment variables that hold secrets, as plugins declare them; each declaration is
    undone when its plugin unloads. `child_env` builds what a tool subprocess may see."""

    def __init__(self) -> None:
        self._secrets: Counter[str] = Counter()

    def withhold(self, ctx: Context, name: str) -> Disposer:
        """Declare `name` secret (never passed to a tool), for as long as the plugin owning `ctx` is loaded."""
        if not _NAME.fullmatch(name):
            raise ValueError(f'"{name}" is not an environment variable name')
        self._secrets[name] += 1

        def undo() -> None:
            self._secrets[name] -= 1
            if not self._secrets[name]:
                del self._secrets[name]

        return ctx.effect(undo)

    def secrets(self) -> frozenset[str]:
        """The names declared secret now."""
        return frozenset(self._secrets)

    def withheld(self, name: str, policy: EnvPolicy) -> bool:
        """Whether `name` is kept from tool subprocesses under `policy`."""
        if name in self._secrets or _matches(name, policy.deny):
            return True
        if _matches(name, policy.allow):
            return False
        return _matches(name, CREDENTIAL_PATTERNS)

    def child_env(self, base: Mapping[str, str], policy: EnvPolicy) -> dict[str, str]:
        """`base` without every variable `policy` withholds, and without any other variable holding the same value
        as a withheld one (`export KEY_COPY=$DEEPSEEK_API_KEY` does not smuggle it through)."""
        kept: dict[str, str] = {}
        secret_values: set[str] = set()
        for name, value in base.items():
            if self.withheld(name, policy):
                if len(value) >= _MIN_SECRET_CHARS:
                    secret_values.add(value)
            else:
                kept[name] = value
        return {name: value for name, value in kept.items() if value not in secret_values}


TOOL_ENV = ServiceKey[ToolEnvironment]("tool-environment")
