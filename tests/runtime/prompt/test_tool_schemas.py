"""Tool schemas are values shared read-only by every assembly: their parameters are frozen when the schema is built,
an in-place change fails loudly, a waterfall listener replaces a schema instead, and the frozen form encodes to the
same bytes as the plain one (what the model request and the logged `request/header` carry)."""

from __future__ import annotations

import copy
import json
import pickle
from collections.abc import Callable
from typing import Any

import msgspec
import pytest

from dsh.runtime import tools as tools_plugin
from dsh.runtime.kernel import Context, ListenerError
from dsh.runtime.prompt import (
    ASSEMBLE,
    SYSTEM_PROMPT,
    AssembleContext,
    PromptAssembly,
    PromptError,
    ReadOnlyToolSchemaError,
    SystemPrompt,
    ToolSchema,
    ToolSchemaError,
    ToolSet,
)
from dsh.runtime.prompt import plugin as prompt_plugin
from dsh.runtime.tools import TOOLS, Tool, ToolContext

pytestmark = pytest.mark.anyio

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {"type": "string", "enum": ["ls", "pwd"], "description": 'Ünïcode and "quotes".'},
        "timeout": {"type": "number", "minimum": 0.5, "default": None},
        "flags": {"type": "array", "items": {"type": "boolean"}},
    },
    "required": ["command"],
    "additionalProperties": False,
}


def bash() -> ToolSchema:
    return ToolSchema("bash", "Run a command.", copy.deepcopy(PARAMETERS))


MUTATIONS: dict[str, Callable[[dict[str, Any]], object]] = {
    "setitem": lambda p: p.__setitem__("type", "array"),
    "delitem": lambda p: p.__delitem__("required"),
    "nested setitem": lambda p: p["properties"].__setitem__("extra", {}),
    "update": lambda p: p["properties"]["command"].update(type="integer"),
    "setdefault": lambda p: p.setdefault("title", "x"),
    "pop": lambda p: p.pop("required"),
    "popitem": lambda p: p.popitem(),
    "clear": lambda p: p["properties"].clear(),
    "list append": lambda p: p["required"].append("timeout"),
    "list setitem": lambda p: p["properties"]["command"]["enum"].__setitem__(0, "rm"),
    "list extend": lambda p: p["required"].extend(["flags"]),
    "list insert": lambda p: p["required"].insert(0, "flags"),
    "list remove": lambda p: p["required"].remove("command"),
    "list sort": lambda p: p["properties"]["command"]["enum"].sort(),
    "list reverse": lambda p: p["properties"]["command"]["enum"].reverse(),
    "list delitem": lambda p: p["required"].__delitem__(0),
}


@pytest.mark.parametrize("mutate", MUTATIONS.values(), ids=list(MUTATIONS))
def test_changing_parameters_in_place_fails_loudly(mutate: Callable[[dict[str, Any]], object]) -> None:
    schema = bash()
    with pytest.raises(ReadOnlyToolSchemaError) as caught:
        mutate(schema.parameters)
    assert caught.value.tool == "bash"
    assert str(caught.value).startswith(
        'tool "bash" parameters are shared read-only by every prompt assembly: '
    )
    assert isinstance(caught.value, PromptError)
    assert isinstance(caught.value, TypeError)
    assert schema.parameters == PARAMETERS


def test_augmented_assignment_fails_loudly_too() -> None:
    schema = bash()
    parameters = schema.parameters
    with pytest.raises(ReadOnlyToolSchemaError):
        parameters |= {"title": "x"}
    required = parameters["required"]
    with pytest.raises(ReadOnlyToolSchemaError):
        required += ["flags"]
    assert schema.parameters == PARAMETERS


def test_the_schema_keeps_a_copy_of_what_it_was_built_from() -> None:
    source = copy.deepcopy(PARAMETERS)
    schema = ToolSchema("bash", "Run a command.", source)
    source["properties"]["command"]["enum"].append("rm")
    assert schema.parameters == PARAMETERS


def test_copies_are_plain_and_editable() -> None:
    parameters = bash().parameters
    for editable in (copy.deepcopy(parameters), json.loads(json.dumps(parameters))):
        editable["properties"]["command"]["enum"].append("rm")
        assert type(editable) is dict
    shallow = parameters.copy()
    shallow["title"] = "x"
    assert type(shallow) is dict
    assert "title" not in parameters
    assert copy.copy(parameters) == parameters
    assert type(copy.copy(parameters)) is dict


def test_the_frozen_form_encodes_to_the_plain_bytes() -> None:
    schema = bash()
    plain = {"name": "bash", "description": "Run a command.", "parameters": copy.deepcopy(PARAMETERS)}
    assert msgspec.json.encode(schema) == msgspec.json.encode(plain)
    assert msgspec.msgpack.encode(schema) == msgspec.msgpack.encode(plain)
    assert json.dumps(schema.parameters) == json.dumps(PARAMETERS)
    assert msgspec.to_builtins(schema) == {
        "name": "bash",
        "description": "Run a command.",
        "parameters": PARAMETERS,
    }
    # to_builtins gives plain values, so a decoded log (lists, dicts) compares equal to it
    assert msgspec.to_builtins(schema) == msgspec.json.decode(msgspec.json.encode(plain))
    assert type(msgspec.to_builtins(schema)["parameters"]["required"]) is list


def test_decoding_gives_a_frozen_schema() -> None:
    decoded = msgspec.json.decode(msgspec.json.encode(bash()), type=ToolSchema)
    assert decoded == bash()
    with pytest.raises(ReadOnlyToolSchemaError):
        decoded.parameters["properties"]["command"]["enum"].append("rm")


def test_pickling_round_trips_the_frozen_form() -> None:
    restored = pickle.loads(pickle.dumps(bash()))
    assert restored == bash()
    with pytest.raises(ReadOnlyToolSchemaError):
        restored.parameters["required"].append("x")


def test_tuples_become_arrays() -> None:
    schema = ToolSchema("t", "T.", {"type": "object", "required": ("a", "b")})
    assert schema.parameters["required"] == ["a", "b"]
    assert msgspec.json.encode(schema.parameters) == b'{"type":"object","required":["a","b"]}'


@pytest.mark.parametrize(
    ("parameters", "path", "what"),
    [
        ({"type": "object", "default": object()}, "$.default", "object"),
        ({"type": "object", "properties": {"a": {"enum": [1, {2}]}}}, "$.properties.a.enum[1]", "set"),
        ({"type": "object", 1: "x"}, "$", "int"),
    ],
)
def test_parameters_that_are_not_json_shaped_are_refused_when_the_schema_is_built(
    parameters: dict[Any, Any], path: str, what: str
) -> None:
    with pytest.raises(ToolSchemaError) as caught:
        ToolSchema("odd", "Odd.", parameters)
    assert caught.value.tool == "odd"
    assert caught.value.path == path
    assert str(caught.value).startswith('tool "odd" parameters must be JSON-shaped')
    assert what in str(caught.value)


def test_parameters_must_be_an_object() -> None:
    with pytest.raises(ToolSchemaError, match='tool "odd" parameters must be a JSON object'):
        ToolSchema("odd", "Odd.", ["type"])  # type: ignore[arg-type]  # the wrong type is the point


# -- in assemblies -----------------------------------------------------------------------------------------


async def test_every_assembly_shares_the_providers_schemas_in_a_fresh_list(sp: SystemPrompt) -> None:
    schema = bash()
    sp.tools(lambda context: ToolSet((schema,)))
    first, second = await sp.assemble(), await sp.assemble()
    assert first.tools[0] is schema
    assert second.tools[0] is schema
    assert first.tools is not second.tools
    first.tools.clear()
    assert (await sp.assemble()).tools == [schema]


async def test_a_listener_that_changes_a_schema_in_place_fails_the_assembly(
    ctx: Context, sp: SystemPrompt
) -> None:
    sp.tools(lambda context: ToolSet((bash(),)))

    async def mutate(assembly: PromptAssembly, context: AssembleContext, next: Any) -> PromptAssembly:
        assembly.tools[0].parameters["properties"]["command"]["enum"].append("rm")
        return await next(assembly)  # type: ignore[no-any-return]  # next is the kernel's Next

    ctx.on(ASSEMBLE, mutate)
    with pytest.raises(ListenerError) as caught:
        await sp.assemble()
    assert isinstance(caught.value.__cause__, ReadOnlyToolSchemaError)


async def test_a_listener_replaces_a_schema_for_its_assembly_only(ctx: Context, sp: SystemPrompt) -> None:
    schema = bash()
    sp.tools(lambda context: ToolSet((schema,)))

    async def narrow(assembly: PromptAssembly, context: AssembleContext, next: Any) -> PromptAssembly:
        parameters = copy.deepcopy(assembly.tools[0].parameters)
        parameters["properties"]["command"]["enum"] = ["pwd"]
        assembly.tools[0] = msgspec.structs.replace(assembly.tools[0], parameters=parameters)
        return await next(assembly)  # type: ignore[no-any-return]  # next is the kernel's Next

    dispose = ctx.on(ASSEMBLE, narrow)
    narrowed = (await sp.assemble()).tools[0]
    assert narrowed.parameters["properties"]["command"]["enum"] == ["pwd"]
    with pytest.raises(ReadOnlyToolSchemaError):
        narrowed.parameters["required"].append("x")  # the replacement is frozen as well
    dispose()
    assert (await sp.assemble()).tools == [schema]
    assert schema.parameters == PARAMETERS


async def test_the_tool_registry_shares_one_schema_per_registered_tool() -> None:
    ctx = Context()
    ctx.plugin(prompt_plugin)
    ctx.plugin(tools_plugin.plugin)

    async def execute(arguments: dict[str, Any], context: ToolContext) -> str:
        return "ok"

    source = copy.deepcopy(PARAMETERS)
    ctx.get(TOOLS).register(Tool("bash", "Run a command.", source, execute))
    sp = ctx.get(SYSTEM_PROMPT)
    first, second = await sp.assemble(), await sp.assemble()
    assert first.tools == [bash()]
    assert first.tools[0] is second.tools[0]
    with pytest.raises(ReadOnlyToolSchemaError):
        first.tools[0].parameters["required"].append("x")
    ctx.dispose()


def test_a_renamed_schema_names_itself_in_errors() -> None:
    renamed = msgspec.structs.replace(bash(), name="shell")
    assert renamed.parameters == PARAMETERS
    with pytest.raises(ReadOnlyToolSchemaError) as caught:
        renamed.parameters["required"].append("x")
    assert caught.value.tool == "shell"


async def test_the_registry_s_shared_tuples_follow_every_registration_and_disposal() -> None:
    ctx = Context()
    ctx.plugin(prompt_plugin)
    ctx.plugin(tools_plugin.plugin)

    async def execute(arguments: dict[str, Any], context: ToolContext) -> str:
        return "ok"

    def names(assembly: PromptAssembly) -> list[str]:
        return [t.name for t in assembly.tools]

    sp = ctx.get(SYSTEM_PROMPT)
    agent = ctx.scoped("agent")
    ctx.get(TOOLS).register(Tool("bash", "Run.", {"type": "object"}, execute))
    assert names(await sp.assemble(AssembleContext(ctx=agent))) == ["bash"]
    dispose = agent.get(TOOLS).register(Tool("read", "Read.", {"type": "object"}, execute))
    assert names(await sp.assemble(AssembleContext(ctx=agent))) == ["bash", "read"]
    assert names(await sp.assemble()) == ["bash"]
    dispose()
    assert names(await sp.assemble(AssembleContext(ctx=agent))) == ["bash"]
    ctx.get(TOOLS).register(Tool("grep", "Grep.", {"type": "object"}, execute))
    assert names(await sp.assemble(AssembleContext(ctx=agent))) == ["bash", "grep"]
    agent.dispose()
    ctx.dispose()
