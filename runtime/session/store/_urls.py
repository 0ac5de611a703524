"""Store URLs as they may be shown: `redact_url` is the one form in which a URL is printed or logged (its password
gone, from the userinfo and from a `password=` parameter), `redact` takes a store URL's password out of any text (a
libpq message quotes the URL or a piece of it), and `url_password` finds the password a URL carries. Standard
library only, and never raising on a malformed URL: the `dsh` entry point uses them before anything is imported, and
an error message about a bad URL is where they matter most."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

__all__ = ["CREDENTIAL_URL", "is_postgres_url", "redact", "redact_url", "url_password"]

CREDENTIAL_URL = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://[^\s/@:]*):([^\s/@]*)@")
"""A URL whose userinfo carries a password (`scheme://user:PASSWORD@host`; libpq reads the userinfo up to the first
`@` or `/`, and so does this): group 1 is the scheme and user, group 2 the password."""
_PASSWORD_PARAM = re.compile(r"(?i)([?&]password=)([^&\s]*)")
# how redact_url drops a `password=` parameter: the first of several keeps its `?`, a last or only one goes
_PASSWORD_PARAMS = (
    (re.compile(r"(?i)\?password=[^&\s]*&"), "?"),
    (re.compile(r"(?i)[?&]password=[^&\s\"']*"), ""),
)
_HIDDEN = "***"


def is_postgres_url(spec: str | Path) -> bool:
    """Whether a store spec names a PostgreSQL database rather than a file."""
    return str(spec).startswith(("postgresql://", "postgres://"))


def url_password(text: str) -> str | None:
    """The first password `text` carries in a URL's userinfo or a `password=` parameter (as written, still
    percent-encoded), or None."""
    found = CREDENTIAL_URL.search(text)
    if found is not None and found.group(2):
        return found.group(2)
    param = _PASSWORD_PARAM.search(text)
    return param.group(2) if param is not None and param.group(2) else None


def redact_url(spec: str | Path) -> str:
    """`spec` as it may be printed: every URL in it without its password (`postgresql://u:PW@h/db` ->
    `postgresql://u@h/db`, a `password=` parameter dropped); a path, or a URL without a password, is unchanged."""
    text = CREDENTIAL_URL.sub(r"\1@", str(spec))
    for param, kept in _PASSWORD_PARAMS:
        text = param.sub(kept, text)
    return text


def redact(text: str, url: str | Path | None) -> str:
    """`text` (an error message, a log line) with `url`'s password in every form it may appear in (as written,
    percent-decoded) replaced by `***`, and every URL in it redacted (`redact_url`)."""
    if url is not None:
        password = url_password(str(url))
        if password:
            for form in sorted({password, unquote(password)}, key=len, reverse=True):
                if form:
                    text = text.replace(form, _HIDDEN)
    return redact_url(text)
