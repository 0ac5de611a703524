"""The `ask_user_question` tool (the original's): the model asks a person one or more questions, each with an id,
optional options (labels) and whether several may be chosen; the call waits until a surface answering
`interaction/question` (the terminal of `dsh chat` or `dsh run`) returns the answers, which come back as the
original's JSON `{"answers": [{id, selected, custom?}]}`."""

from __future__ import annotations

import json
from typing import Any

from dsh.runtime.tools import QUESTION, Choice, Question, Questions, Tool, ToolContext, ToolResult

__all__ = ["ASK_USER_QUESTION", "NO_ONE_TO_ASK", "ask_user_tool"]

ASK_USER_QUESTION = "ask_user_question"
NO_ONE_TO_ASK = "NO_ONE_TO_ASK"

DESCRIPTION = (
    "Ask the user a concise question when you need confirmation, a choice, or missing information before "
    "proceeding. Send one or more questions, each with a stable id that will be echoed in the answer."
)

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "questions": {
            "type": "array",
            "minItems": 1,
            "description": "Questions to ask the user before continuing.",
            "items": {
                "type": "object",
                "properties": {
                    "id": {
                        "type": "string",
                        "description": "Stable id for this question; echoed in the answer.",
                    },
                    "question": {"type": "string", "description": "The specific question to ask the user."},
                    "header": {
                        "type": "string",
                        "description": 'Optional short heading for the question, such as "Confirm" or "Choose Mode".',
                    },
                    "options": {
                        "type": "array",
                        "description": "Optional choices to show the user. If you recommend one, put it first and "
                        'append "(Recommended)" to that label.',
                        "items": {
                            "type": "object",
                            "properties": {
                                "label": {"type": "string", "description": "Short user-facing option label."},
                                "description": {
                                    "type": "string",
                                    "description": "One sentence explaining the tradeoff or impact.",
                                },
                            },
                            "required": ["label"],
                        },
                    },
                    "multi_select": {
                        "type": "boolean",
                        "description": "Whether the user may select more than one option. Defaults to false.",
                    },
                },
                "required": ["id", "question"],
            },
        }
    },
    "required": ["questions"],
}


def _questions(arguments: dict[str, Any]) -> tuple[Question, ...]:
    return tuple(
        Question(
            id=item["id"],
            question=item["question"],
            header=item.get("header"),
            options=tuple(Choice(o["label"], o.get("description")) for o in item.get("options", [])),
            multi_select=bool(item.get("multi_select", False)),
        )
        for item in arguments["questions"]
    )


async def _execute(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
    answers = await context.ctx.waterfall(QUESTION, None, Questions(_questions(arguments), context))
    if answers is None:
        return ToolResult.error(
            NO_ONE_TO_ASK,
            "no one could be asked: no surface that answers questions is attached to this session",
        )
    out = [
        {"id": a.id, "selected": list(a.selected), **({"custom": a.custom} if a.custom is not None else {})}
        for a in answers
    ]
    return ToolResult(json.dumps({"answers": out}, ensure_ascii=False))


def ask_user_tool() -> Tool:
    """The tool; not hermetic (a person answers), so a replay serves the recorded answer."""
    return Tool(
        name=ASK_USER_QUESTION,
        description=DESCRIPTION,
        parameters=PARAMETERS,
        execute=_execute,
        hermetic=False,
    )
