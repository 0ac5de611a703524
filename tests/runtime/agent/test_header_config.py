"""The `request/header` config is the call's route plus its `CallConfig`, built from it in one place
(`_header_config`): every `CallConfig` field has its `HeaderConfig` twin under the same wire name, and the header's
config bytes are the route's followed by the call config's own."""

from __future__ import annotations

import msgspec
import pytest

from dsh.runtime.agent._loop import _header_config
from dsh.runtime.llm import CallConfig
from dsh.runtime.session import HeaderConfig

CONFIGS = [
    CallConfig(),
    CallConfig(max_tokens=9),
    CallConfig(temperature=0.5, max_tokens=100, reasoning_effort="off", stop=("x", "y")),
    CallConfig(reasoning_effort="high", stop=()),
]


def test_every_call_config_field_is_a_header_config_field_of_the_same_wire_name() -> None:
    header = {field.name: field.encode_name for field in msgspec.structs.fields(HeaderConfig)}
    for field in msgspec.structs.fields(CallConfig):
        assert header.get(field.name) == field.encode_name, field.name


@pytest.mark.parametrize("config", CONFIGS)
def test_the_header_config_is_the_route_then_the_call_config(config: CallConfig) -> None:
    built = _header_config("deepseek", "deepseek-chat", config)
    wire = msgspec.json.decode(msgspec.json.encode(built))
    assert wire == {
        "provider": "deepseek",
        "model": "deepseek-chat",
        **msgspec.json.decode(msgspec.json.encode(config)),
    }
    assert list(wire) == ["provider", "model", *msgspec.json.decode(msgspec.json.encode(config))]
    assert built == HeaderConfig(
        provider="deepseek",
        model="deepseek-chat",
        temperature=config.temperature,
        max_tokens=config.max_tokens,
        reasoning_effort=config.reasoning_effort,
        stop=config.stop,
    )
