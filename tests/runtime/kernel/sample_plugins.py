"""Plugins that the kernel and config tests load by import path (`tests.runtime.kernel.sample_plugins:NAME`)."""

from __future__ import annotations

import msgspec

from dsh.runtime.kernel import Context, Plugin, ServiceKey

GREETER = ServiceKey[str]("greeter")
CLOCK = ServiceKey[str]("sample-clock")


class GreeterConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    greeting: str
    repeat: int = 1
    tags: list[str] = msgspec.field(default_factory=list)


def _apply_greeter(ctx: Context, config: GreeterConfig) -> None:
    ctx.provide(GREETER, config.greeting * config.repeat)


greeter = Plugin(name="greeter", apply=_apply_greeter, config=GreeterConfig, provides=(GREETER,))


def _apply_user(ctx: Context, config: object) -> None:
    ctx.get(GREETER)


user = Plugin(name="greeter-user", apply=_apply_user, needs=(GREETER,))

plugin = user  # the default attribute `use: tests.runtime.kernel.sample_plugins` resolves to

not_a_plugin = "just a string"
