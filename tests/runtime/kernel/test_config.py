"""Deployment files: every kind of bad config fails before any apply, naming the plugin, key path and expectation."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh.runtime.kernel import (
    ConfigError,
    Context,
    ServiceConflictError,
    check_needs,
    load_deployment,
    load_deployment_into,
)

from .sample_plugins import GREETER, GreeterConfig

SAMPLES = "tests.runtime.kernel.sample_plugins"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "deploy.yml"
    path.write_text(text)
    return path


def failure(tmp_path: Path, text: str, env: dict[str, str] | None = None) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        load_deployment(write(tmp_path, text), env=env or {})
    return caught.value


GOOD = f"""\
model: deepseek-v4-flash
plugins:
  - id: hello
    use: {SAMPLES}:greeter
    config:
      greeting: ${{GREETING}}
      tags: ["${{MISSING:-fallback}}"]
  - id: user
    use: {SAMPLES}
"""


def test_a_good_deployment_loads_in_order(tmp_path: Path) -> None:
    deployment = load_deployment(write(tmp_path, GOOD), env={"GREETING": "hi"})
    assert deployment.model == "deepseek-v4-flash"
    assert [(e.id, e.line) for e in deployment.plugins] == [("hello", 3), ("user", 8)]
    assert deployment.plugins[0].config == GreeterConfig(greeting="hi", tags=["fallback"])
    check_needs(deployment)
    ctx = Context()
    loaded = load_deployment_into(ctx, deployment)
    assert ctx.get(GREETER) == "hi"
    assert [p.id for p in loaded] == ["hello", "user"]


def test_unknown_key(tmp_path: Path) -> None:
    error = failure(tmp_path, GOOD.replace("greeting:", "greting:").replace("${GREETING}", "x"))
    assert (error.plugin, error.path, error.line) == ("hello", "$.config", 3)
    assert "unknown key `greting` (did you mean `greeting`?); valid keys: greeting," in str(error)


def test_wrong_type_names_the_key_path(tmp_path: Path) -> None:
    error = failure(
        tmp_path, GOOD.replace('tags: ["${MISSING:-fallback}"]', "repeat: many"), {"GREETING": "x"}
    )
    assert (error.plugin, error.path) == ("hello", "$.config.repeat")
    assert "Expected `int`, got `str`" in str(error)
    assert str(error).startswith(f'{tmp_path / "deploy.yml"}:3, plugin "hello", at `$.config.repeat`')


def test_missing_required_key(tmp_path: Path) -> None:
    error = failure(tmp_path, GOOD.replace("greeting: ${GREETING}", "repeat: 2"))
    assert error.plugin == "hello"
    assert "missing required field `greeting`" in str(error)


def test_unset_environment_variable(tmp_path: Path) -> None:
    error = failure(tmp_path, GOOD)
    assert (error.plugin, error.path) == ("hello", "$.config.greeting")
    assert "environment variable GREETING is not set" in str(error)


def test_use_path_that_does_not_import(tmp_path: Path) -> None:
    error = failure(tmp_path, GOOD.replace(f"{SAMPLES}\n", "tests.nowhere\n"), {"GREETING": "x"})
    assert (error.plugin, error.path, error.line) == ("user", "$.use", 8)
    assert "does not import" in str(error)


def test_use_path_that_is_not_a_plugin(tmp_path: Path) -> None:
    error = failure(tmp_path, GOOD.replace(f"{SAMPLES}\n", f"{SAMPLES}:not_a_plugin\n"), {"GREETING": "x"})
    assert "must name a Plugin value" in str(error)
    assert "is str" in str(error)


def test_yaml_syntax_error_has_the_line(tmp_path: Path) -> None:
    error = failure(tmp_path, "plugins:\n  - id: a\n    use: [unclosed\n")
    assert error.line == 4
    assert "YAML syntax error" in str(error)


def test_unknown_top_level_key_and_bad_entry_shape(tmp_path: Path) -> None:
    error = failure(tmp_path, "model: m\nplugin: []\nplugins: []\n")
    assert error.line == 2
    assert str(error).endswith(
        "unknown key `plugin` (did you mean `plugins`?); valid keys: plugins, model, provider"
    )
    error = failure(tmp_path, "plugin:\n  - id: a\n")  # not "`plugins` must be a list"
    assert "unknown key `plugin` (did you mean `plugins`?)" in str(error)
    error = failure(tmp_path, "plugins:\n  - id: a\n    uses: x\n")
    assert "unknown key `uses` (did you mean `use`?); valid keys: id, use, config" in str(error)
    assert error.line == 2
    error = failure(tmp_path, "plugins:\n  - id: a\n")
    assert (error.path, error.line) == ("$.plugins[0]", 2)
    assert "missing required field `use`" in str(error)
    assert "must be a list" in str(failure(tmp_path, "plugins: 3\n"))


def test_duplicate_ids(tmp_path: Path) -> None:
    text = f"plugins:\n  - id: a\n    use: {SAMPLES}\n  - id: a\n    use: {SAMPLES}\n"
    assert failure(tmp_path, text).line == 4


def test_needs_must_be_met_by_an_earlier_plugin(tmp_path: Path) -> None:
    text = f"plugins:\n  - id: user\n    use: {SAMPLES}\n  - id: hello\n    use: {SAMPLES}:greeter\n    config: {{greeting: hi}}\n"
    deployment = load_deployment(write(tmp_path, text), env={})
    with pytest.raises(ConfigError, match=r'needs service "greeter".*plugins that provide it: hello'):
        check_needs(deployment)


def test_host_provided_services_count_as_present_from_the_start(tmp_path: Path) -> None:
    text = f"plugins:\n  - id: user\n    use: {SAMPLES}\n"
    deployment = load_deployment(write(tmp_path, text), env={})
    with pytest.raises(ConfigError, match='needs service "greeter"'):
        check_needs(deployment)
    check_needs(deployment, host=(GREETER,))
    ctx = Context()
    ctx.provide(GREETER, "hi")  # what the check stands for: the host provides it before loading
    load_deployment_into(ctx, deployment)


def test_a_plugin_providing_a_host_service_conflicts_as_it_would_at_load(tmp_path: Path) -> None:
    text = f"plugins:\n  - id: hello\n    use: {SAMPLES}:greeter\n    config: {{greeting: hi}}\n"
    deployment = load_deployment(write(tmp_path, text), env={})
    with pytest.raises(
        ConfigError, match='provides service "greeter", which plugin "root" already provides'
    ) as caught:
        check_needs(deployment, host=(GREETER,))
    assert (caught.value.plugin, caught.value.line) == ("hello", 2)
    ctx = Context()
    ctx.provide(GREETER, "hi")
    with pytest.raises(ServiceConflictError, match='which plugin "root" already provides'):
        load_deployment_into(ctx, deployment)
