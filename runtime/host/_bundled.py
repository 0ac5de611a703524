"""What the wheel ships to try dsh with (`dsh.examples`: the example deployments and the demo recording), found by
name, so a hint dsh prints works outside a checkout: `--config coding-agent`, `--replay demo`, `dsh replay demo`."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from dsh.runtime.kernel import ConfigError

__all__ = ["DEMO", "EXAMPLES_PACKAGE", "bundled_deployment", "bundled_deployments", "bundled_recording"]

EXAMPLES_PACKAGE = "dsh.examples"
DEMO = "demo"
"""The name of the bundled demo recording (a coding turn: glob, grep, read, edit, write and bash)."""


def _examples() -> Path:
    return Path(str(files(EXAMPLES_PACKAGE)))


def _bare(path: Path) -> bool:
    """A name, not a path: one part, and no such file or directory here (a file of that name wins)."""
    return len(path.parts) == 1 and not path.exists()


def bundled_deployments() -> list[str]:
    """The names of the example deployments the wheel ships."""
    return sorted(p.stem for p in _examples().glob("*.yml"))


def bundled_deployment(config: Path) -> Path:
    """`--config` (or `$DSH_CONFIG`): a deployment file, or the name of a bundled example (`coding-agent`,
    `acp-agent`, with or without `.yml`) when no such file exists here."""
    if not _bare(config):
        return config
    name = config.name.removesuffix(".yml").removesuffix(".yaml")
    found = _examples() / f"{name}.yml"
    if found.is_file():
        return found
    raise ConfigError(
        f"deployment {config}: no such file, and no bundled example deployment of that name; bundled: "
        f"{', '.join(bundled_deployments())} (e.g. --config coding-agent)"
    )


def bundled_recording(log: Path) -> Path:
    """`--replay LOG` (and `dsh replay LOG`): a log or scenario directory, or `demo`, the bundled demo recording,
    when no such file or directory exists here."""
    if _bare(log) and log.name == DEMO:
        return _examples() / DEMO
    return log
