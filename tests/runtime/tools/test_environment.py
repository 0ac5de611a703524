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
        "DATABASE_URL": "postgres://h/db",  # no password: only the deny list withholds it
        "INTERNAL_ENDPOINT": "http://10.0.0.1",
        "GITHUB_TOKEN": "ghp_0000000000",
        "NPM_TOKEN": "npm_000000000",
    }
    # A declared secret is withheld though `allow` names it, and `deny` wins over `allow`.
    assert environment.child_env(base, policy) == {"PATH": "/bin"}
    assert environment.child_env(base, EnvPolicy(allow=("NPM_*",))) == {
        "PATH": "/bin",
        "DATABASE_URL": "postgres://h/db",  # no password: only the deny list withholds it
        "INTERNAL_ENDPOINT": "http://10.0.0.1",
        "NPM_TOKEN": "npm_000000000",
    }


def test_a_copy_of_a_secret_under_another_name_is_withheld_too() -> None:
    base = {"DEEPSEEK_API_KEY": "sk-secret-value", "COPY": "sk-secret-value", "FLAG": "1", "DEBUG_TOKEN": "1"}
    assert ToolEnvironment().child_env(base, DEFAULT) == {"FLAG": "1"}


KEY = "sk-deepseek-0a1b2c3d4e5f"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MYSQL_PWD", "hunter2hunter2"),
        ("GITHUB_PAT", "0123456789abcdef0123"),
        ("SENTRY_DSN", "https://0123456789abcdef@o1.ingest.sentry.io/42"),
        ("CI_JOB_JWT", "not-even-a-jwt-shape"),
        ("CI_JOB_JWT_V2", "not-even-a-jwt-shape"),
        ("AZURE_STORAGE_CONNECTION_STRING", "AccountName=a;AccountKey=b"),
        ("DATABASE_URL", "postgres://app:db-pass-93be41@db/app"),
        ("DB", "mysql://root:pw-0f3e2d1c@127.0.0.1:3306/app"),
        ("HTTPS_PROXY", "http://user:proxy-pass-77@proxy:3128"),
        ("http_proxy", "http://user:proxy-pass-77@proxy:3128"),
        ("ALL_PROXY", "socks5://user:proxy-pass-77@proxy:1080"),
        ("PG", "host=db dbname=app password=pw-1234"),
        ("PGURL", "postgresql://db/app?sslmode=require&password=pw-1234"),
        ("SOMETHING", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig"),
        ("GH", "ghp_" + "a" * 36),
        ("GH2", "github_pat_" + "a" * 40),
        ("SLACK", "xoxb-0123456789-abcdef"),
        ("AWS", "AKIAABCDEFGHIJKLMNOP"),
        ("LLM", KEY),
        ("PEM", "-----BEGIN OPENSSH PRIVATE KEY-----\nabc"),
        ("DSH_STORE", "postgresql://dsh:store-pass@db/dsh"),
        ("DSH_CONFIG", "/etc/dsh/agent.yml"),
    ],
)
def test_disguised_credentials_are_withheld_by_name_or_by_value(name: str, value: str) -> None:
    base = {"PATH": "/bin", name: value}
    assert ToolEnvironment().child_env(base, DEFAULT) == {"PATH": "/bin"}


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("HTTPS_PROXY", "http://proxy:3128"),
        ("DATABASE_URL", "postgres://app@db/app"),
        ("HOMEPAGE", "https://example.com/a:b@c"),
        ("PWD", "/home/user/src"),
        ("OLDPWD", "/home/user"),
        ("PATH", "/home/user/desk-top/bin:/usr/bin"),
        ("EMAIL", "user@example.com"),
    ],
)
def test_ordinary_values_pass(name: str, value: str) -> None:
    assert ToolEnvironment().child_env({name: value}, DEFAULT) == {name: value}


def test_a_value_containing_a_secret_is_withheld_too() -> None:
    base = {
        "DEEPSEEK_API_KEY": KEY,
        "AUTH_HEADER": f"Bearer {KEY}",
        "CURL_ARGS": f"-H 'Authorization: Bearer {KEY}' -s",
        "DATABASE_URL": "postgres://app:db-pass-93be41@db/app",
        "PGPASS_COPY": "db-pass-93be41",  # the password of a withheld URL, alone
        "SHORT": "on",
    }
    assert ToolEnvironment().child_env(base, DEFAULT) == {"SHORT": "on"}
    # the percent-encoded password of a withheld URL, decoded
    encoded = {"DATABASE_URL": "postgres://app:p%40ss-0f3e2d1c@db/app", "RAW": "p@ss-0f3e2d1c", "X": "1"}
    assert ToolEnvironment().child_env(encoded, DEFAULT) == {"X": "1"}


def test_allow_keeps_a_credential_looking_value_but_never_dsh_settings() -> None:
    base = {
        "HTTPS_PROXY": "http://u:proxy-pass-77@proxy:3128",
        "DSH_STORE": "postgresql://u:pw-abcdefgh@db/x",
    }
    assert ToolEnvironment().child_env(base, EnvPolicy(allow=("HTTPS_PROXY", "DSH_STORE"))) == {
        "HTTPS_PROXY": "http://u:proxy-pass-77@proxy:3128"
    }


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
