"""The tool environment: credential-looking names withheld by default, plugin-declared secrets withheld whatever a
deployment allows, deny and allow lists, copies of a secret's value withheld too, and declarations undone when
their plugin unloads."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from dsh.plugins.llm_openai import plugin as openai_plugin
from dsh.plugins.tool_web import plugin as web_plugin
from dsh.runtime.kernel import Context
from dsh.runtime.llm import plugin as llm_plugin
from dsh.runtime.prompt import plugin as prompt_plugin
from dsh.runtime.tools import TOOL_ENV, EnvPolicy, ToolEnvironment, guard
from dsh.runtime.tools import plugin as tools_plugin
from dsh.runtime.tools.guard import SUPPORTED

DEFAULT = EnvPolicy()


@pytest.mark.parametrize(
    "name",
    [
        "DEEPSEEK_API_KEY",
        "OPENAI_API_KEY",
        "openai_api_key",
        "MY_APIKEY",
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "AWS_SESSION_TOKEN",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "CLIENT_SECRET",
        "PGPASSWORD",
        "DB_PASSWORD_FILE",
        "SSH_KEY_PASSPHRASE",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "NPM_CONFIG__AUTH",
        "SLACK_BOT_TOKEN_V2",
        "JWT_PRIVATE_KEY",
        "STRIPE_KEY",
    ],
)
def test_credential_looking_names_are_withheld_by_default(name: str) -> None:
    assert ToolEnvironment().withheld(name, DEFAULT)


@pytest.mark.parametrize(
    "name", ["PATH", "HOME", "LANG", "TERM", "TOKENIZERS_PARALLELISM", "KEYBOARD", "UV_CACHE_DIR", "AUTHOR"]
)
def test_ordinary_names_are_passed(name: str) -> None:
    assert not ToolEnvironment().withheld(name, DEFAULT)


def test_allow_and_deny_lists_and_declared_secrets() -> None:
    ctx = Context()
    environment = ToolEnvironment()
    environment.withhold(ctx, "PROVIDER_CRED")
    policy = EnvPolicy(
        allow=("GITHUB_TOKEN", "PROVIDER_CRED"), deny=("DATABASE_URL", "INTERNAL_*", "GITHUB_TOKEN")
    )
    base = {
        "PATH": "/bin",
        "PROVIDER_CRED": "sk-provider-0001",
        "DATABASE_URL": "postgres://u:p@h/db",
        "INTERNAL_ENDPOINT": "http://10.0.0.1",
        "GITHUB_TOKEN": "ghp_0000000000",
        "NPM_TOKEN": "npm_000000000",
    }
    # A declared secret is withheld though `allow` names it, and `deny` wins over `allow`.
    assert environment.child_env(base, policy) == {"PATH": "/bin"}
    assert environment.child_env(base, EnvPolicy(allow=("NPM_*",))) == {
        "PATH": "/bin",
        "DATABASE_URL": "postgres://u:p@h/db",
        "INTERNAL_ENDPOINT": "http://10.0.0.1",
        "NPM_TOKEN": "npm_000000000",
    }


def test_a_copy_of_a_secret_under_another_name_is_withheld_too() -> None:
    base = {"DEEPSEEK_API_KEY": "sk-secret-value", "COPY": "sk-secret-value", "FLAG": "1", "DEBUG_TOKEN": "1"}
    assert ToolEnvironment().child_env(base, DEFAULT) == {"FLAG": "1"}


@pytest.mark.parametrize("entry", ["", "A-B", "1ABC", "A B", "A=B"])
def test_a_bad_list_entry_is_refused(entry: str) -> None:
    with pytest.raises(ValueError, match="is not a variable name or a pattern of one"):
        EnvPolicy(deny=(entry,))


def test_plugins_declare_their_secrets_and_unloading_undoes_it() -> None:
    ctx = Context()
    ctx.plugin(prompt_plugin)
    ctx.plugin(tools_plugin)
    ctx.plugin(llm_plugin)
    environment = ctx.get(TOOL_ENV)
    assert environment.secrets() == frozenset()
    routes = {
        "providers": [
            {"id": "a", "base_url": "http://a", "api_key_env": "A_CRED"},
            {"id": "b", "base_url": "http://b"},
        ]
    }
    openai = ctx.plugin(openai_plugin, routes)
    web = ctx.plugin(web_plugin, {"search": {"base_url": "http://s", "api_key_env": "SEARCH_CRED"}})
    assert environment.secrets() == {"A_CRED", "SEARCH_CRED"}
    web.unload()
    assert environment.secrets() == {"A_CRED"}
    openai.unload()
    assert environment.secrets() == frozenset()


def test_two_declarations_of_one_name_need_both_undone() -> None:
    ctx = Context()
    environment = ToolEnvironment()
    first = environment.withhold(ctx, "SHARED")
    environment.withhold(ctx, "SHARED")
    first()
    assert environment.secrets() == {"SHARED"}


def test_the_service_comes_and_goes_with_the_tools_plugin() -> None:
    ctx = Context()
    tools = ctx.plugin(tools_plugin)
    assert ctx.has(TOOL_ENV)
    tools.unload()
    assert not ctx.has(TOOL_ENV)


def dumpable() -> int:
    import ctypes

    return int(ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))  # PR_GET_DUMPABLE


@pytest.mark.skipif(not SUPPORTED, reason="PR_SET_DUMPABLE is Linux's")
def test_while_tools_are_loaded_dsh_is_not_dumpable() -> None:
    before = dumpable()
    ctx = Context()
    tools = ctx.plugin(tools_plugin)
    assert dumpable() == 0
    tools.unload()
    assert dumpable() == before


NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
VICTIM = (
    "import importlib.util, sys, time\n"
    "spec = importlib.util.spec_from_file_location('guard', sys.argv[1])\n"
    "guard = importlib.util.module_from_spec(spec)\n"
    "spec.loader.exec_module(guard)\n"
    "if sys.argv[2] == 'hide':\n"
    "    guard.undumpable()\n"
    "print('ready', flush=True)\n"
    "time.sleep(30)\n"
)


@pytest.mark.skipif(
    not (SUPPORTED and os.geteuid() == 0 and shutil.which("setpriv") and Path("/usr/bin/python3").exists()),
    reason="needs root to run both processes as nobody (setpriv), and a system python nobody can run",
)
@pytest.mark.parametrize("hidden", [True, False], ids=["undumpable", "control"])
def test_an_undumpable_process_keeps_its_environment_from_the_same_user(tmp_path: Path, hidden: bool) -> None:
    # Run as nobody, so no capability lets the reader past the kernel's check, as for an ordinary user's dsh.
    shared = Path(tempfile.mkdtemp())
    shared.chmod(0o755)
    guard_copy = shared / "guard.py"
    shutil.copy(guard.__file__, guard_copy)
    guard_copy.chmod(0o644)
    secret = "sk-started-with-0f9e"
    victim = subprocess.Popen(
        [*NOBODY, "/usr/bin/python3", "-I", "-c", VICTIM, str(guard_copy), "hide" if hidden else "show"],
        env={"PATH": "/usr/bin:/bin", "DEEPSEEK_API_KEY": secret},
        stdout=subprocess.PIPE,
    )
    try:
        assert victim.stdout is not None
        assert victim.stdout.readline() == b"ready\n"
        read = subprocess.run(
            [*NOBODY, "cat", f"/proc/{victim.pid}/environ"], capture_output=True, check=False
        )
    finally:
        victim.kill()
        victim.communicate()
        shutil.rmtree(shared)
    if hidden:
        assert read.returncode != 0
        assert b"Permission denied" in read.stderr
        assert secret.encode() not in read.stdout
    else:
        assert secret.encode() in read.stdout  # the attack works on an ordinary process: the test can fail
