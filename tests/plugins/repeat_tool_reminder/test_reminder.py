"""The repeat-call reminder counts identical consecutive calls per agent (arguments compared with keys sorted) and
speaks at the original's thresholds: gently at 3, then naming the tool, the count and the arguments at 5 and 8; an
excluded tool is transparent, another call breaks the run."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest

from dsh.plugins.repeat_tool_reminder import GENTLE, Config, RepeatReminder, canonical, detailed, source
from dsh.runtime.agent import Agent


class _Agent:
    """Stands for an agent: the reminder keys its runs by agent identity."""


def _calls(reminder: RepeatReminder, agent: Any, calls: list[tuple[str, str]]) -> list[str | None]:
    said = [reminder.observe(cast(Agent, agent), name, arguments) for name, arguments in calls]
    return [None if s is None else s[0] for s in said]


def test_a_reminder_carries_the_originals_plugin_source() -> None:
    reminder, agent = RepeatReminder(Config()), _Agent()
    said = [reminder.observe(cast(Agent, agent), "read", "{}") for _ in range(3)]
    assert said[2] is not None
    assert said[2][1] == source("read", 3)
    assert said[2][1].summary == "read \u00d7 3"
    assert said[2][1].form == "notice"


def test_the_thresholds_are_three_five_and_eight() -> None:
    reminder, agent = RepeatReminder(Config()), _Agent()
    said = _calls(reminder, agent, [("read", '{"file_path": "a", "limit": 5}')] * 9)
    spoke = [index + 1 for index, text in enumerate(said) if text is not None]
    assert spoke == [3, 5, 8]
    assert said[2] == GENTLE
    assert said[4] == detailed("read", 5, '{"file_path":"a","limit":5}')
    assert said[4] is not None
    assert said[4].startswith("Repeated tool call detected:\n- tool: read\n- consecutive_calls: 5\n")


def test_key_order_does_not_matter_and_a_different_call_breaks_the_run() -> None:
    reminder, agent = RepeatReminder(Config()), _Agent()
    same = [("grep", '{"a": 1, "b": [{"y": 2, "x": 1}]}'), ("grep", '{"b": [{"x": 1, "y": 2}], "a": 1}')]
    assert _calls(reminder, agent, [*same, same[0]])[-1] == GENTLE
    assert _calls(reminder, agent, [("glob", "{}"), *same])[-1] is None  # the run restarted at 1
    assert canonical("not json") == '"not json"'


def test_excluded_tools_are_transparent_and_agents_count_apart() -> None:
    reminder = RepeatReminder(Config(exclude=("todo_*",)))
    one, two = _Agent(), _Agent()
    call = ("bash", '{"command": "ls"}')
    said = _calls(reminder, one, [call, ("todo_write", "{}"), call, ("todo_write", "{}"), call])
    assert said[-1] == GENTLE
    assert _calls(reminder, two, [call])[-1] is None


def test_a_long_argument_is_quoted_cut() -> None:
    reminder, agent = RepeatReminder(Config(thresholds=(2, 3), arguments_preview_chars=10)), _Agent()
    said = _calls(reminder, agent, [("write", '{"content": "' + "x" * 50 + '"}')] * 3)
    assert said[2] is not None
    assert '- arguments: {"content"… (+54 more chars)\n' in said[2]


@pytest.mark.parametrize("thresholds", [(), (1, 3), (3, 3)])
def test_bad_thresholds_are_refused(thresholds: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match="repeat_tool_reminder"):
        Config(thresholds=thresholds)


def test_in_a_run_the_reminder_is_logged_after_the_third_result_and_read_in_the_next_step() -> None:
    import anyio

    from dsh.replay import load_scenario, rerun
    from dsh.runtime.llm import PluginSource
    from dsh.runtime.session import UserMessageEvent

    scenario = Path(__file__).parents[3] / "fixtures" / "authored" / "repeat-tool-reminder"
    result = anyio.run(rerun, load_scenario(scenario))
    assert result.divergence is None
    types = [e.type for e in result.events]
    reminders = [
        (index, view.data)
        for index, view in enumerate(e.view() for e in result.events)
        if isinstance(view, UserMessageEvent) and isinstance(view.data.source, PluginSource)
    ]
    assert len(reminders) == 1
    index, message = reminders[0]
    assert types[index - 1 : index + 2] == ["tool/result", "user/message", "step/end"]
    assert message.source == source("read", 3)
    assert [tc.name for tc in result.tool_calls] == ["read"] * 4
