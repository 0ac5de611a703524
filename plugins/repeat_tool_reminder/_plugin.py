"""The `repeat_tool_reminder` plugin: when an agent calls the same tool with the same arguments several times in a
row (the original's thresholds 3, 5 and 8), a reminder from the `repeat-tool-reminder` plugin source is logged after
the step's tool results (the model reads it in the next step), worded as the original words it: gentle at the first
threshold, then naming the tool, the run length and the arguments. It observes and never vetoes a call; a user's
message resets the count."""

from __future__ import annotations

import json
import re
import weakref
from dataclasses import dataclass
from typing import Any

import msgspec

from dsh.runtime.agent import EVENT, STEP_RESULTS, Agent, AgentEvent, StepResults
from dsh.runtime.kernel import Context, Next, Plugin
from dsh.runtime.llm import MessageId, PluginSource, TextBlock, ToolResultBlock, UserMessage, UserSource
from dsh.runtime.session import ToolCall, ToolResultEvent, UserMessageEvent

__all__ = ["GENTLE", "PLUGIN", "Config", "RepeatReminder", "canonical", "detailed", "plugin", "source"]

PLUGIN = "repeat-tool-reminder"
TIMES = "\u00d7"  # the multiplication sign of the original's summary
FORM = "notice"


def source(tool: str, count: int) -> PluginSource:
    """The source a reminder carries, as the original writes it (`{kind: plugin, plugin: repeat-tool-reminder, form:
    notice, summary: "read <times sign> 3"}`): labelled, so it never reads as the user's words."""
    return PluginSource(plugin=PLUGIN, form=FORM, summary=f"{tool} {TIMES} {count}")


GENTLE = (
    "You are repeating the exact same tool call with identical arguments. Carefully analyze the previous result "
    "before calling again: if the task is not complete, try a different approach or different arguments instead "
    "of repeating the call."
)


def detailed(tool: str, count: int, arguments: str) -> str:
    """The reminder past the first threshold."""
    return (
        "Repeated tool call detected:\n"
        f"- tool: {tool}\n"
        f"- consecutive_calls: {count}\n"
        f"- arguments: {arguments}\n"
        "The repeated calls are not making progress. Do not call this tool with these exact arguments again. "
        "Inspect the latest result and choose a different action, different arguments, or finish the task if "
        "enough evidence has been gathered."
    )


class Config(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """`thresholds`: run lengths that send a reminder (integers >= 2, no duplicates; the smallest sends the gentle
    one). `include`: tool-name patterns (`*` wildcards) to count, empty: every tool; `exclude`: patterns that neither
    count nor break a run. `arguments_preview_chars`: how much of the arguments the detailed reminder quotes."""

    thresholds: tuple[int, ...] = (3, 5, 8)
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    arguments_preview_chars: int = 500

    def __post_init__(self) -> None:
        if not self.thresholds:
            raise ValueError("repeat_tool_reminder: thresholds must not be empty")
        bad = [t for t in self.thresholds if t < 2]
        if bad:
            raise ValueError(f"repeat_tool_reminder: every threshold must be an integer >= 2, got {bad}")
        if len(set(self.thresholds)) != len(self.thresholds):
            raise ValueError(f"repeat_tool_reminder: thresholds lists a value twice: {list(self.thresholds)}")
        if self.arguments_preview_chars < 1:
            raise ValueError(
                f"repeat_tool_reminder: arguments_preview_chars must be >= 1, got {self.arguments_preview_chars}"
            )


def _pattern(text: str) -> re.Pattern[str]:
    return re.compile("^" + ".*".join(re.escape(part) for part in text.split("*")) + "$")


def canonical(arguments: str) -> str:
    """The call's arguments with object keys sorted at every depth, as compact JSON (text that is not JSON: as a
    JSON string), so calls differing only in key order count as the same."""
    try:
        value: Any = json.loads(arguments)
    except ValueError:
        value = arguments
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass
class _Chain:
    key: tuple[str, str]
    count: int


class RepeatReminder:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.thresholds = sorted(config.thresholds)
        self._include = [_pattern(p) for p in config.include]
        self._exclude = [_pattern(p) for p in config.exclude]
        self._chains: weakref.WeakKeyDictionary[Agent, _Chain] = weakref.WeakKeyDictionary()
        self._calls: weakref.WeakKeyDictionary[Agent, dict[str, tuple[str, str]]] = (
            weakref.WeakKeyDictionary()
        )
        self._due: weakref.WeakKeyDictionary[Agent, list[tuple[str, PluginSource]]] = (
            weakref.WeakKeyDictionary()
        )

    def tracked(self, tool: str) -> bool:
        if self._include and not any(p.match(tool) for p in self._include):
            return False
        return not any(p.match(tool) for p in self._exclude)

    def observe(self, agent: Agent, tool: str, arguments: str) -> tuple[str, PluginSource] | None:
        """Count one finished call; the reminder (text and source) when its run length is a threshold."""
        if not self.tracked(tool):
            return None
        key = (tool, canonical(arguments))
        chain = self._chains.get(agent)
        count = chain.count + 1 if chain is not None and chain.key == key else 1
        self._chains[agent] = _Chain(key, count)
        if count not in self.thresholds:
            return None
        if count == self.thresholds[0]:
            return GENTLE, source(tool, count)
        cap = self.config.arguments_preview_chars
        shown = key[1] if len(key[1]) <= cap else f"{key[1][:cap]}… (+{len(key[1]) - cap} more chars)"
        return detailed(tool, count, shown), source(tool, count)

    async def on_event(self, event: AgentEvent) -> None:
        stored = event.event
        if stored.type not in (ToolCall.TAG, ToolResultEvent.TAG, UserMessageEvent.TAG):
            return
        agent, view = event.agent, stored.view()
        calls = self._calls.setdefault(agent, {})
        if isinstance(view, ToolCall):
            calls[view.data.call_id] = (view.data.name, view.data.arguments)
        elif isinstance(view, ToolResultEvent):
            for block in view.data.message.content:
                if not isinstance(block, ToolResultBlock) or block.tool_call_id not in calls:
                    continue
                name, arguments = calls.pop(block.tool_call_id)
                reminder = self.observe(agent, name, arguments)
                if reminder is not None:
                    self._due.setdefault(agent, []).append(reminder)
        elif isinstance(view, UserMessageEvent) and isinstance(view.data.source, UserSource):
            self._chains.pop(agent, None)  # the user spoke: repetition across it is not a loop

    async def on_step_results(
        self, added: tuple[UserMessage, ...], info: StepResults, next_: Next[tuple[UserMessage, ...]]
    ) -> tuple[UserMessage, ...]:
        """The reminders the step's results earned, after them (as the original appends its tool contexts)."""
        due = self._due.pop(info.agent, [])
        ids = info.agent.log.ids
        mine = tuple(
            UserMessage(id=MessageId(ids.new_id("message")), content=(TextBlock(text),), source=said)
            for text, said in due
        )
        return await next_((*mine, *added))


def _apply(ctx: Context, config: Config) -> None:
    reminder = RepeatReminder(config)
    ctx.on(EVENT, reminder.on_event)
    ctx.on(STEP_RESULTS, reminder.on_step_results)


plugin = Plugin(
    name="repeat_tool_reminder",
    apply=_apply,
    config=Config,
    description="reminds the model when it repeats one tool call with identical arguments (thresholds 3, 5, 8)",
)
