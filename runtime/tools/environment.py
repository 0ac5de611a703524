"""What a tool's subprocess inherits of dsh's environment: the `ToolEnvironment` service, where plugins name the
variables that hold their secrets (a provider's API key), and the policy that builds a child's environment without
them, without anything whose name or value looks like a credential, without dsh's own settings (`DSH_*`), without
anything that contains a withheld value, and with a deployment's own allow and deny lists."""

from __future__ import annotations

import fnmatch
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import unquote

from dsh.runtime.kernel import Context, Disposer, ServiceKey
from dsh.runtime.session import url_password

__all__ = [
    "CREDENTIAL_PATTERNS",
    "CREDENTIAL_VALUES",
    "DSH_SETTINGS",
    "TOOL_ENV",
    "EnvPolicy",
    "ToolEnvironment",
]

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
    "*_PWD",
    "*_PAT",
    "*_PAT_*",
    "*_DSN",
    "*JWT*",
    "*CONNECTION_STRING*",
)
"""Names (matched case-insensitively, shell-glob style) that look like credentials and are withheld by default:
`OPENAI_API_KEY`, `GITHUB_TOKEN`, `GITHUB_PAT`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `PGPASSWORD`,
`MYSQL_PWD`, `NPM_CONFIG__AUTH`, `GOOGLE_APPLICATION_CREDENTIALS`, `SENTRY_DSN`, `CI_JOB_JWT`, ..."""

CREDENTIAL_VALUES: tuple[re.Pattern[str], ...] = (
    re.compile(r"(?i)\b[a-z][a-z0-9+.\-]*://[^\s/@:]*:[^\s/@]+@"),  # a URL carrying a password (user:PW@host)
    re.compile(
        r"(?i)(?:^|[\s?&;])(?:password|pwd)\s*=\s*[^&;\s]"
    ),  # a password parameter (URL, conninfo, ADO)
    re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"),  # a JSON web token
    re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})"),  # GitHub tokens
    re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}"),  # a GitLab personal access token
    re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),  # Slack tokens
    re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),  # an AWS access key id
    re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"),  # OpenAI-style API keys (DeepSeek's, Anthropic's sk-ant-...)
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),  # a PEM private key
)
"""Values that are credentials whatever their variable is called (`HTTPS_PROXY=http://u:PW@proxy:3128`,
`DATABASE_URL=postgres://app:PW@db/app`, a token pasted into `CI_VARS`): withheld by default, like a name of
`CREDENTIAL_PATTERNS`."""

DSH_SETTINGS = "DSH_*"
"""dsh's own settings (`DSH_STORE`, the store URL with its password; `DSH_CONFIG`): never passed to a tool, whatever
a deployment's `allow` says."""

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

    def withheld(self, name: str, policy: EnvPolicy, value: str | None = None) -> bool:
        """Whether the variable `name` (holding `value`, when given) is kept from tool subprocesses under `policy`:
        a declared secret, dsh's own setting or a denied name always; else not if `allow` names it; else if its name
        looks like a credential (`CREDENTIAL_PATTERNS`) or its value is one (`CREDENTIAL_VALUES`)."""
        if name in self._secrets or _matches(name, (DSH_SETTINGS, *policy.deny)):
            return True
        if _matches(name, policy.allow):
            return False
        if _matches(name, CREDENTIAL_PATTERNS):
            return True
        return value is not None and any(pattern.search(value) for pattern in CREDENTIAL_VALUES)

    def child_env(self, base: Mapping[str, str], policy: EnvPolicy) -> dict[str, str]:
        """`base` without every variable `policy` withholds, and without any other variable whose value contains a
        withheld value or the password of a withheld URL (`export KEY_COPY=$DEEPSEEK_API_KEY`,
        `AUTH_HEADER="Bearer $DEEPSEEK_API_KEY"` and `PGPASS=$PW` do not smuggle it through)."""
        kept: dict[str, str] = {}
        secret_values: set[str] = set()
        for name, value in base.items():
            if self.withheld(name, policy, value):
                password = url_password(value)
                for secret in (value, password, password and unquote(password)):
                    if secret and len(secret) >= _MIN_SECRET_CHARS:
                        secret_values.add(secret)
            else:
                kept[name] = value
        return {
            name: value
            for name, value in kept.items()
            if not any(secret in value for secret in secret_values)
        }


TOOL_ENV = ServiceKey[ToolEnvironment]("tool-environment")
