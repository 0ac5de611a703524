"""Turning the model's raw argument text into validated arguments, or into a model-facing error result."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from dsh.runtime.jsonlines import MAX_DEPTH, JsonLineError, check_depth

from .definition import ToolDefinitionError, ToolResult

__all__ = ["INVALID_ARGUMENTS", "ArgumentValidator"]

INVALID_ARGUMENTS = "INVALID_ARGUMENTS"


def _plain(value: object) -> object:
    # an immutable mapping or a tuple in a shared schema, for json.dumps
    return dict(value) if isinstance(value, Mapping) else list(value)  # type: ignore[call-overload]


@functools.lru_cache(maxsize=1024)
def _schema_problem(canonical: str) -> str | None:
    """Why the schema whose canonical JSON is `canonical` is not a valid JSON schema (None: it is). Checking a
    schema against the metaschema costs about a millisecond, and every agent a host starts registers the same
    tools again (a re-run, a subagent, each ACP session), so each distinct schema is checked once per process."""
    try:
        Draft202012Validator.check_schema(json.loads(canonical))
    except SchemaError as error:
        return error.message
    return None


class ArgumentValidator:
    """Validates one tool's arguments against its JSON schema; the schema itself is checked once, up front (once
    per process for each distinct schema)."""

    __slots__ = ("_tool", "_validator")

    def __init__(self, tool: str, schema: Mapping[str, Any]) -> None:
        try:
            problem = _schema_problem(json.dumps(schema, sort_keys=True, default=_plain))
        except (TypeError, ValueError):  # not JSON (a schema no model could be sent): checked as it is
            problem = None
            try:
                Draft202012Validator.check_schema(schema)
            except SchemaError as error:
                problem = error.message
        if problem is not None:
            raise ToolDefinitionError(
                f'tool "{tool}": parameters are not a valid JSON schema: {problem}', tool=tool
            )
        self._tool = tool
        self._validator = Draft202012Validator(schema)

    def parse(self, raw: str) -> dict[str, Any] | ToolResult:
        """The arguments as a dict, or an error result that tells the model what to fix."""
        text = raw.strip() or "{}"
        try:
            check_depth(text.encode(), max_depth=MAX_DEPTH)
            arguments = json.loads(text)
        except JsonLineError as error:  # nested past the limit: refused before json.loads recurses that deep
            return ToolResult.error(
                INVALID_ARGUMENTS,
                f'invalid arguments for tool "{self._tool}": {error.reason}; send one JSON object',
            )
        except json.JSONDecodeError as error:
            return ToolResult.error(
                INVALID_ARGUMENTS,
                f'invalid arguments for tool "{self._tool}": not valid JSON ({error.msg} at position {error.pos}); '
                "send one JSON object",
            )
        if not isinstance(arguments, dict):
            return ToolResult.error(
                INVALID_ARGUMENTS,
                f'invalid arguments for tool "{self._tool}": expected a JSON object, got {type(arguments).__name__}',
            )
        problems = sorted(self._validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
        if problems:
            lines = [f"- at {problem.json_path}: {problem.message}" for problem in problems]
            return ToolResult.error(
                INVALID_ARGUMENTS, f'invalid arguments for tool "{self._tool}":\n' + "\n".join(lines)
            )
        return arguments
