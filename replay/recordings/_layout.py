"""The file that makes a directory a scenario (`scenario.yml`). Its own module, importing nothing, so the pytest
plugin can recognise scenario directories while it collects without importing what replays them."""

from __future__ import annotations

__all__ = ["SCENARIO_FILE"]

SCENARIO_FILE = "scenario.yml"
