"""The environment of stdio servers: everything they need, none of asyncai's secrets."""

from __future__ import annotations

from asyncai.tools import server_environment
from asyncai.tools.mcp.environment import is_secret_name

KEY = "sk-live-0123456789abcdef"


def test_secrets_are_dropped_and_everything_else_is_kept() -> None:
    environ = {
        "PATH": "/usr/bin",
        "HOME": "/home/u",
        "HTTPS_PROXY": "http://proxy:3128",
        "GITHUB_TOKEN": "ghp-server-needs-this",
        "OPENAI_API_KEY": KEY,
        "ASYNCAI_MONTY_TOKEN": "t0k3n-for-asyncai",
        "ASYNCAI_DB_PASSWORD": "pw-for-asyncai",
        "ASYNCAI_KCP_KUBECONFIGS": "/a:/b",
        "COPY_OF_THE_KEY": KEY,
        "USER": "ollama",
    }
    env = server_environment(environ, {}, [KEY, "ollama", None])
    assert env == {
        "PATH": "/usr/bin",
        "HOME": "/home/u",
        "HTTPS_PROXY": "http://proxy:3128",
        "GITHUB_TOKEN": "ghp-server-needs-this",
        "ASYNCAI_KCP_KUBECONFIGS": "/a:/b",
        "USER": "ollama",
    }


def test_the_config_env_passes_a_secret_on_and_wins() -> None:
    environ = {"OPENAI_API_KEY": KEY, "PATH": "/usr/bin"}
    env = server_environment(environ, {"OPENAI_API_KEY": KEY, "PATH": "/opt/bin"}, [KEY])
    assert env == {"OPENAI_API_KEY": KEY, "PATH": "/opt/bin"}


def test_secret_names() -> None:
    assert is_secret_name("OPENAI_API_KEY") and is_secret_name("asyncai_api_key")
    assert is_secret_name("ASYNCAI_SECRET") and is_secret_name("ASYNCAI_FUTURE_TOKEN")
    assert not is_secret_name("ASYNCAI_MODEL") and not is_secret_name("ANTHROPIC_API_KEY")
