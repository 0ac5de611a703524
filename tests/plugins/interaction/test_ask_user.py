"""`ask_user_question`: the model's questions reach whoever answers `interaction/question`, and the answers come
back as the original's JSON; with no one to ask, the call is an error the model can read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dsh.plugins import interaction
from dsh.runtime.agent import AGENTS, AgentOptions
from dsh.runtime.cli._approval import parse_choice
from dsh.runtime.session import STORE
from dsh.runtime.tools import QUESTION, Answer, Choice, Question, Questions
from tests.runtime.agent.harness import MODEL, PROVIDER, ScriptedAdapter, calls, host, text

pytestmark = pytest.mark.anyio

ARGS = {
    "questions": [
        {"id": "mode", "question": "Which mode?", "options": [{"label": "fast"}, {"label": "safe"}]},
        {"id": "name", "question": "Your name?"},
    ]
}


async def _ask(tmp_path: Path, listener: Any) -> str:
    adapter = ScriptedAdapter([calls(("q1", "ask_user_question", json.dumps(ARGS))), text("thanks")])
    with host(tmp_path, adapter) as ctx:
        ctx.plugin(interaction.plugin, {"ask_user_question": True})
        if listener is not None:
            ctx.on(QUESTION, listener)
        async with ctx.get(AGENTS).create(
            AgentOptions(provider=PROVIDER, model=MODEL, cwd=tmp_path)
        ) as agent:
            await agent.run("go")
            await agent.log.flush()
            results = [json.loads(e.data) for e in ctx.get(STORE).events(agent.id, types=("tool/result",))]
    return str(results[0]["message"]["content"][0]["content"][0]["text"])


async def test_the_answers_come_back_as_the_originals_json(tmp_path: Path) -> None:
    seen: list[Questions] = []

    async def answer(value: Any, questions: Questions, next_: Any) -> tuple[Answer, ...]:
        seen.append(questions)
        return (Answer("mode", ("safe",)), Answer("name", (), "Ada"))

    result = await _ask(tmp_path, answer)
    assert json.loads(result) == {
        "answers": [{"id": "mode", "selected": ["safe"]}, {"id": "name", "selected": [], "custom": "Ada"}]
    }
    assert [q.id for q in seen[0].questions] == ["mode", "name"]
    assert [o.label for o in seen[0].questions[0].options] == ["fast", "safe"]


async def test_with_no_one_to_ask_the_call_says_so(tmp_path: Path) -> None:
    assert "no one could be asked" in await _ask(tmp_path, None)


def test_a_typed_answer_picks_options_by_number_or_is_the_persons_own() -> None:
    single = Question("m", "Which?", options=(Choice("fast"), Choice("safe")))
    assert parse_choice("2", single) == Answer("m", ("safe",))
    assert parse_choice("1, 2", single) == Answer("m", ("fast",))
    several = Question("m", "Which?", options=(Choice("fast"), Choice("safe")), multi_select=True)
    assert parse_choice("1, 2", several) == Answer("m", ("fast", "safe"))
    assert parse_choice("something else", single) == Answer("m", (), "something else")
