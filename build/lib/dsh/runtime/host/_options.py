"""The options the `dsh` commands share (`dsh run`, `dsh chat`, `dsh sessions`, and `dsh acp` from plugins/acp),
declared once so their names, help and defaults agree."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = [
    "ConfigOption",
    "CwdOption",
    "ModelOption",
    "ProviderOption",
    "ReplayOption",
    "SessionOption",
    "StoreOption",
]

StoreOption = Annotated[
    str | None,
    typer.Option(
        "--store",
        envvar="DSH_STORE",
        show_envvar=False,
        help="The session store: a SQLite file or a postgresql:// URL (also $DSH_STORE) "
        "\\[default: $XDG_DATA_HOME/dsh/sessions.db].",
    ),
]
ConfigOption = Annotated[
    Path | None, typer.Option("--config", help="The deployment YAML file \\[default: $DSH_CONFIG].")
]
SessionOption = Annotated[str | None, typer.Option("--session", help="Continue this stored session.")]
ModelOption = Annotated[
    str | None, typer.Option("--model", help="The model \\[default: the deployment's `model:`].")
]
ProviderOption = Annotated[
    str | None,
    typer.Option("--provider", help="The provider route \\[default: the deployment's `provider:`]."),
]
CwdOption = Annotated[
    Path | None,
    typer.Option("--cwd", help="The workspace \\[default: the current directory; a resumed session's own]."),
]
ReplayOption = Annotated[
    Path | None,
    typer.Option(
        "--replay",
        help="Serve the model from this recorded log (a JSONL log or a scenario directory) instead of the live "
        "endpoint; tools still run live. No key needed.",
    ),
]
