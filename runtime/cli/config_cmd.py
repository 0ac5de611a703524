"""`dsh config check FILE`: validate a deployment and list the plugins it would load, in order."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from dsh.runtime.host import HOST_SERVICES, bundled_deployment
from dsh.runtime.kernel import check_needs, load_deployment

__all__ = ["config_app"]

config_app = typer.Typer(
    help="Deployment config files.\n\nExample: dsh config check coding-agent",
    no_args_is_help=True,
)


@config_app.command("check")
def check(
    file: Annotated[Path, typer.Argument(help="The deployment YAML file.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the plugin list as JSON.")] = False,
) -> None:
    """Validate FILE without applying any plugin, and list its plugins with what each provides and needs. The
    services the dsh command itself provides (the session store) count as present.

    Example: dsh config check coding-agent
    """
    deployment = load_deployment(bundled_deployment(file))
    check_needs(deployment, host=HOST_SERVICES)
    host = [key.name for key in HOST_SERVICES]
    rows = [
        {
            "id": entry.id,
            "use": entry.use,
            "provides": [key.name for key in entry.plugin.provides],
            "needs": [key.name for key in entry.plugin.needs],
        }
        for entry in deployment.plugins
    ]
    if as_json:
        typer.echo(json.dumps({"file": str(file), "host": host, "plugins": rows}))
        return
    console = Console()
    console.print(
        f"{file}: {len(rows)} plugin{'' if len(rows) == 1 else 's'}, loaded in this order",
        highlight=False,
        soft_wrap=True,
    )
    console.print(f"provided by the dsh command: {', '.join(host)}", highlight=False, soft_wrap=True)
    table = Table()
    for column in ("#", "id", "use", "provides", "needs"):
        table.add_column(column)
    for index, row in enumerate(rows, 1):
        table.add_row(
            str(index),
            str(row["id"]),
            str(row["use"]),
            ", ".join(row["provides"]) or "-",
            ", ".join(row["needs"]) or "-",
        )
    console.print(table)
