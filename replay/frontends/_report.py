"""A stored session re-run for a viewer (`dsh web`'s replay view, reached through the `dsh.rerun` entry point): the
session and its children written out as a scenario, re-run as `dsh replay run ID --store` does, the replayed log
imported back into the store beside it, and the two skeletons with the first line where they differ."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from dsh.runtime.session import SessionStoreProtocol, export_jsonl, import_jsonl

from ..driver._rerun import rerun
from ..driver._scenario import load_scenario
from ..script._recording import ROOT_LOG

__all__ = ["RerunReport", "rerun_stored", "write_scenario"]


@dataclass(frozen=True)
class RerunReport:
    """What re-running session `recorded_id` gave: `divergence` (None: it matches) as the CLI prints it, the
    primary session's `recorded` and `replayed` skeleton lines, `at`, the index of the first line that differs (None
    when they agree), and `replayed_id`, the replayed session now in the store (None when the re-run made none)."""

    recorded_id: str
    replayed_id: str | None
    divergence: str | None
    recorded: list[str]
    replayed: list[str]
    at: int | None


def write_scenario(store: SessionStoreProtocol, session_id: str, directory: Path) -> Path:
    """Session `session_id` (and the children it spawned or forked) written into `directory` as a scenario."""
    root = store.info(session_id)
    for number, info in enumerate([root, *store.children(root.id)]):
        name = ROOT_LOG if number == 0 else f"session.{number}.jsonl"
        with (directory / name).open("wb") as handle:
            export_jsonl(store, info.id, handle)
    return directory


def _first_difference(recorded: list[str], replayed: list[str]) -> int | None:
    for index, (left, right) in enumerate(zip(recorded, replayed, strict=False)):
        if left != right:
            return index
    return None if len(recorded) == len(replayed) else min(len(recorded), len(replayed))


async def rerun_stored(store: SessionStoreProtocol, session_id: str) -> RerunReport:
    """Re-run stored session `session_id` through the deployment `dsh replay` uses and report it (see the module)."""
    with tempfile.TemporaryDirectory(prefix="dsh-rerun-") as scratch:
        directory = write_scenario(store, session_id, Path(scratch))
        result = await rerun(load_scenario(directory))
        replayed_id = None
        if result.logs:
            log = Path(scratch) / "replayed.jsonl"
            log.write_bytes(result.logs[0][1])
            replayed_id = import_jsonl(store, log).id
    recorded = result.recorded[0] if result.recorded else []
    replayed = result.replayed[0] if result.replayed else []
    return RerunReport(
        session_id, replayed_id, result.divergence, recorded, replayed, _first_difference(recorded, replayed)
    )
