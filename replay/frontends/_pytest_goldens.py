"""The pytest plugin's additions for issue #34, kept light (imported when pytest starts): the third golden's name
and when a scenario keeps it, and `UnseenTools`, which gathers the tools each scenario's deployment offered that its
recording never saw (from every worker, through the reports' `user_properties`) and names each once per run."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ..driver._scenario import Scenario

__all__ = ["PROMPT_GOLDEN", "UNSEEN_PROPERTY", "UnseenTools", "with_prompt_golden"]

PROMPT_GOLDEN = "prompt"
"""The third golden, `replay[prompt]`: the system prompt and tool schemas each distinct step sent."""

UNSEEN_PROPERTY = "dsh_unseen_tools"


def with_prompt_golden(scenario: Scenario, ini: Any) -> bool:
    """Whether `scenario` keeps the prompt golden: its `prompt_golden:`, else the `dsh_prompt_goldens` ini option."""
    pinned = scenario.doc.prompt_golden
    return bool(ini) if pinned is None else pinned


class UnseenTools:
    """Reports, at the end of the run, each tool a scenario's deployment offered that its recording never saw."""

    def __init__(self) -> None:
        self.unseen: dict[str, list[str]] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":
            return
        for name, tools in report.user_properties:
            if name == UNSEEN_PROPERTY and isinstance(tools, list | tuple):
                for tool in tools:
                    self.unseen.setdefault(str(tool), []).append(report.nodeid.rsplit("::", 1)[0])

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.unseen:
            return
        from ..driver._prompts import (
            unseen_note,  # the replay machinery: only once a run found something to report
        )

        terminalreporter.section("dsh: stale recordings")
        for tool, where in sorted(self.unseen.items()):
            shown = ", ".join(where[:3]) + (f" and {len(where) - 3} more" if len(where) > 3 else "")
            terminalreporter.write_line(f"{unseen_note(tool)} ({shown})")
