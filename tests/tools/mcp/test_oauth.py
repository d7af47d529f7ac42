"""Signing in to an HTTP MCP server behind OAuth, as a user does it: ``asyncai tools``, ``run-code``
and ``asyncai mcp login|logout`` run as commands against a real MCP server whose authorization
server (the ``mcp`` SDK's routes, see ``tests/fakes/oauth_server.py``) approves at once and
records what it saw. The "browser" is ``tests/conformance/browser.py``, named by ``BROWSER``.

No test waits for time to pass: an expired token is made by the fake refusing the tokens it issued
(``expire_access_tokens``) and by moving the stored ``expires_at`` into the past, which is what
an hour between two runs does to both sides.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import queue
import signal
import stat
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import BIN, CliResult, asyncai
from tests.cli.helpers import assert_one_line_usage_error
from tests.conformance.browser import visit
from tests.fakes.oauth_server import SERVER_NAME, OAuthFake, oauth_server
from tests.fakes.servers import free_port

BROWSER = Path(__file__).resolve().parents[2] / "conformance" / "browser.py"
NAME = "secure"
WHOAMI = "await whoami()"


@pytest.fixture(autouse=True)
def _no_browser_unless_given(monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``BROWSER`` of the person running the tests must not answer for them."""
    monkeypatch.delenv("BROWSER", raising=False)


@pytest.fixture
def fake() -> Iterator[OAuthFake]:
    with oauth_server() as server:
        yield server


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "state"


def run(state: Path, *args: str, browser: str | None = None) -> CliResult:
    """``asyncai ARGS`` with its own XDG_STATE_HOME, stdin not a terminal, ``BROWSER`` only if given."""
    env = {"XDG_STATE_HOME": str(state)}
    if browser is not None:
        env["BROWSER"] = browser
    return asyncai(*args, env=env)


def side_by_side(*calls: Callable[[], CliResult]) -> list[CliResult]:
    """Independent commands at the same time (each is a process; this only saves wall time)."""
    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(lambda call: call(), calls))


def http(fake: OAuthFake) -> list[str]:
    return ["--mcp-http", f"{NAME}={fake.mcp_url}"]


def token_file(state: Path, url: str) -> Path:
    """Where the sign-in for ``url`` is kept, as documented: named by the URL's hash."""
    return state / "asyncai" / "oauth" / f"{hashlib.sha256(url.encode()).hexdigest()[:32]}.json"


def an_hour_passes(fake: OAuthFake, state: Path) -> None:
    """The server refuses every access token it issued, and the stored one is past its expiry."""
    fake.expire_access_tokens()
    path = token_file(state, fake.mcp_url)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["expires_at"] > time.time(), "the stored token was not known to be fresh"
    data["expires_at"] = time.time() - 3600
    path.write_text(json.dumps(data), encoding="utf-8")  # the file exists: its mode stays


def whoami(result: CliResult) -> dict[str, Any]:
    assert result.status == 0, result.stderr
    answer: dict[str, Any] = json.loads(result.stdout)
    assert answer["server"] == SERVER_NAME
    return answer


def needs_sign_in_line(name: str = NAME) -> str:
    return f"server {name}: needs sign-in (asyncai mcp login {name})"


def assert_no_secrets(fake: OAuthFake, results: list[CliResult]) -> None:
    """No access or refresh token the fake issued, no client secret, reached stdout or stderr."""
    secrets = [*fake.issued_access_tokens, *fake.issued_refresh_tokens, *fake.client_secrets]
    assert fake.issued_access_tokens and fake.issued_refresh_tokens and fake.client_secrets
    for result in results:
        for secret in secrets:
            assert secret not in result.stdout and secret not in result.stderr, (
                f"a secret ({secret[:6]}...) was printed"
            )


def test_without_a_sign_in_tools_says_so_and_run_code_names_the_login_command(
    fake: OAuthFake, state: Path
) -> None:
    listing, code = side_by_side(
        lambda: run(state, "tools", *http(fake)), lambda: run(state, "run-code", "-c", WHOAMI, *http(fake))
    )
    assert listing.status == 0, listing.stderr
    assert listing.stdout.splitlines() == [needs_sign_in_line()]
    assert_one_line_usage_error(code, f"cannot start MCP server '{NAME}'", f"asyncai mcp login {NAME}")
    assert "Traceback" not in code.stderr and code.stdout == ""
    # Nobody was asked and nothing was registered or stored: the 401 alone was reported.
    assert fake.authorizations == [] and fake.registrations == [] and fake.grants == []
    assert [path for _, path, _ in fake.requests if not path.startswith("/mcp")] == []
    assert not token_file(state, fake.mcp_url).exists()


def test_login_stores_the_sign_in_that_later_runs_use_until_logout(fake: OAuthFake, state: Path) -> None:
    login = run(state, "mcp", "login", NAME, *http(fake), browser=str(BROWSER))
    assert login.status == 0, login.stderr
    assert login.stdout == f"signed in to {NAME}\n"
    assert "Traceback" not in login.stderr

    [client] = fake.registrations  # dynamic registration, for a loopback redirect
    [authorization] = fake.authorizations
    assert authorization.client_id == client.client_id
    assert authorization.redirect_uri.startswith("http://127.0.0.1:")
    assert authorization.redirect_uri.endswith("/callback")
    assert authorization.resource == fake.mcp_url  # RFC 8707: the token is for this server
    assert fake.grant_types == ["authorization_code"]

    path = token_file(state, fake.mcp_url)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700

    # A later run, with nobody to ask (no BROWSER, stdin not a terminal), uses the stored token.
    seen = len(fake.bearer_tokens())
    answer = whoami(run(state, "run-code", "-c", WHOAMI, *http(fake)))
    assert answer["client_id"] == client.client_id
    [token] = fake.issued_access_tokens
    later = fake.bearer_tokens()[seen:]
    assert later and set(later) == {token}
    assert len(fake.authorizations) == 1 and len(fake.registrations) == 1
    assert fake.grant_types == ["authorization_code"]

    logout = run(state, "mcp", "logout", NAME, *http(fake))
    assert logout.status == 0, logout.stderr
    assert logout.stdout == f"signed out of {NAME}\n"
    assert not path.exists()

    listing = run(state, "tools", *http(fake))
    assert listing.status == 0, listing.stderr
    assert listing.stdout.splitlines() == [needs_sign_in_line()]
    assert len(fake.authorizations) == 1


@pytest.mark.parametrize("browser", [None, str(BROWSER)], ids=["nobody-to-ask", "browser"])
def test_an_expired_access_token_is_refreshed_in_a_later_run(
    fake: OAuthFake, state: Path, browser: str | None
) -> None:
    login = run(state, "mcp", "login", NAME, *http(fake), browser=str(BROWSER))
    assert login.status == 0, login.stderr
    [client] = fake.registrations

    # Twice when nobody can be asked: the second proves the rotated refresh token was kept.
    for refreshes in (1, 2) if browser is None else (1,):
        an_hour_passes(fake, state)
        seen = len(fake.bearer_tokens())
        answer = whoami(run(state, "run-code", "-c", WHOAMI, *http(fake), browser=browser))
        assert len(fake.authorizations) == 1 and len(fake.registrations) == 1, "signed in again"
        assert answer["client_id"] == client.client_id
        assert fake.grant_types == ["authorization_code"] + ["refresh_token"] * refreshes
        assert all(grant.client_id == client.client_id for grant in fake.grants)
        # The refreshed token, and only it, was presented: no stale token first.
        assert set(fake.bearer_tokens()[seen:]) == {fake.issued_access_tokens[-1]}


def test_a_client_registered_beforehand_is_used_as_configured(
    fake: OAuthFake, state: Path, tmp_path: Path
) -> None:
    client_id, secret, port = "asyncai-preregistered", "pre-registered-secret-7f3e9a", free_port()
    fake.preregister(client_id, secret, [f"http://127.0.0.1:{port}/callback"])
    config = tmp_path / "mcp.json"
    oauth = {"clientId": client_id, "clientSecret": secret, "callbackPort": port}
    config.write_text(
        json.dumps({"mcpServers": {NAME: {"type": "http", "url": fake.mcp_url, "oauth": oauth}}})
    )

    login = run(state, "-v", "mcp", "login", NAME, "--mcp-config", str(config), browser=str(BROWSER))
    assert login.status == 0, login.stderr
    assert login.stdout == f"signed in to {NAME}\n"
    assert fake.registrations == []
    [authorization] = fake.authorizations
    assert authorization.client_id == client_id
    assert authorization.redirect_uri == f"http://127.0.0.1:{port}/callback"
    assert [(g.grant_type, g.client_id) for g in fake.grants] == [("authorization_code", client_id)]
    basic = "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()
    token_posts = [h for method, path, h in fake.requests if (method, path) == ("POST", "/token")]
    assert [h.get("authorization") for h in token_posts] == [basic]  # client_secret_basic

    code = run(state, "-v", "run-code", "-c", WHOAMI, "--mcp-config", str(config))
    assert whoami(code)["client_id"] == client_id
    assert fake.registrations == [] and len(fake.authorizations) == 1
    # The secret stays in the config file: the state directory holds no copy of it.
    assert secret not in token_file(state, fake.mcp_url).read_text(encoding="utf-8")
    assert_no_secrets(fake, [login, code])  # the configured secret is among them


def _lines(stream: Any, into: queue.Queue[str | None]) -> None:
    for line in stream:
        into.put(line)
    into.put(None)


def test_no_browser_prints_the_url_which_completes_the_sign_in(
    fake: OAuthFake, state: Path, tmp_path: Path
) -> None:
    opened = tmp_path / "browser-was-opened"
    recorder = tmp_path / "recording-browser"
    recorder.write_text(f"#!/bin/sh\necho \"$@\" > '{opened}'\n")
    recorder.chmod(0o755)
    env = {**os.environ, "XDG_STATE_HOME": str(state), "BROWSER": str(recorder)}
    process = subprocess.Popen(
        [str(BIN / "asyncai"), "mcp", "login", NAME, *http(fake), "--no-browser"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert process.stdout is not None and process.stderr is not None
    lines: queue.Queue[str | None] = queue.Queue()
    reader = threading.Thread(target=_lines, args=(process.stderr, lines), daemon=True)
    reader.start()
    stderr: list[str] = []
    try:
        while True:
            line = lines.get(timeout=60)
            assert line is not None, "asyncai ended without printing the URL: " + "".join(stderr)
            stderr.append(line)
            if line.startswith(f"{fake.base_url}/authorize?"):
                break
        url = line.strip()
        assert stderr[-2] == f"asyncai: to sign in to {NAME}, open this URL in a browser:\n"
        assert visit(url), "the authorization URL did not lead back to asyncai"  # the person's browser
        assert process.wait(timeout=60) == 0, "".join(stderr)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    reader.join(10)
    while (rest := lines.get_nowait()) is not None:
        stderr.append(rest)
    assert process.stdout.read() == f"signed in to {NAME}\n"
    assert not opened.exists(), "--no-browser opened the browser"
    [authorization] = fake.authorizations
    assert f"state={authorization.state}" in url
    assert fake.grant_types == ["authorization_code"]
    assert token_file(state, fake.mcp_url).exists()
    assert "Traceback" not in "".join(stderr)


def test_an_interrupted_login_leaves_no_sign_in_behind(fake: OAuthFake, state: Path) -> None:
    env = {**os.environ, "XDG_STATE_HOME": str(state)}
    env.pop("BROWSER", None)
    process = subprocess.Popen(
        [str(BIN / "asyncai"), "mcp", "login", NAME, *http(fake), "--no-browser"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert process.stderr is not None
    lines: queue.Queue[str | None] = queue.Queue()
    reader = threading.Thread(target=_lines, args=(process.stderr, lines), daemon=True)
    reader.start()
    try:
        while (line := lines.get(timeout=60)) is not None:  # the URL: a client was registered for it
            if line.startswith(f"{fake.base_url}/authorize?"):
                break
        assert line is not None, "asyncai ended without printing the URL"
        assert len(fake.registrations) == 1 and fake.grants == []
        process.send_signal(signal.SIGINT)  # the person gives up before coming back from the browser
        assert process.wait(timeout=60) == 130
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    reader.join(10)
    listing, code = side_by_side(
        lambda: run(state, "tools", *http(fake)), lambda: run(state, "run-code", "-c", WHOAMI, *http(fake))
    )
    assert listing.status == 0, listing.stderr
    assert listing.stdout.splitlines() == [needs_sign_in_line()]
    # Never signed in, so nothing expired: the same answer as before the login was tried.
    assert_one_line_usage_error(
        code, f"cannot start MCP server '{NAME}'", f"needs sign-in (asyncai mcp login {NAME})"
    )
    kept = token_file(state, fake.mcp_url).parent
    assert not kept.exists() or list(kept.iterdir()) == [], "a sign-in that never completed was saved"


@pytest.mark.anyio
async def test_the_token_file_is_written_once_tokens_arrive_with_the_client_registered_for_them(
    tmp_path: Path,
) -> None:
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
    from pydantic import AnyUrl

    from asyncai.tools.mcp.oauth import TokenFile

    redirect = "http://127.0.0.1:9/callback"
    path = tmp_path / "oauth" / "token.json"
    storage = TokenFile("http://127.0.0.1:9/mcp", path, redirect, None)
    client = OAuthClientInformationFull(client_id="c1", redirect_uris=[AnyUrl(redirect)])
    await storage.set_client_info(client)
    assert not path.exists(), "a registration alone is no sign-in"
    assert await storage.get_client_info() == client  # the flow still finds it, to exchange the code
    await storage.set_tokens(OAuthToken(access_token="at", expires_in=3600, refresh_token="rt"))
    saved = json.loads(path.read_text(encoding="utf-8"))
    assert saved["client"]["client_id"] == "c1" and saved["tokens"]["access_token"] == "at"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # written through a renamed temp file
    later = TokenFile("http://127.0.0.1:9/mcp", path, redirect, None)  # the next run
    assert await later.get_client_info() == client and later.signed_in


def test_no_token_or_client_secret_is_printed_even_in_the_verbose_log(fake: OAuthFake, state: Path) -> None:
    results = [run(state, "-v", "mcp", "login", NAME, *http(fake), browser=str(BROWSER))]
    # An expired token with a browser at hand: refreshed, or (today) signed in again; either way
    # a stored token, a token request and its answer go through the verbose log.
    an_hour_passes(fake, state)
    results.append(run(state, "-v", "run-code", "-c", WHOAMI, *http(fake), browser=str(BROWSER)))
    for result in results:
        assert result.status == 0, result.stderr
        assert any(line["event"].startswith("HTTP Request: POST") for line in result.log()), "no verbose log"
    assert len(fake.issued_access_tokens) == 2
    assert_no_secrets(fake, results)


@pytest.mark.parametrize(
    ("oauth", "needle"),
    [
        ({"grantType": "password"}, '"oauth.grantType" must be'),
        (
            {"clientMetadataUrl": "http://example.com/client.json"},
            '"oauth.clientMetadataUrl" must be an https://',
        ),
        ({"grantType": "client_credentials", "clientId": "c"}, 'needs "clientId" and "clientSecret"'),
        ({"clientId": "c", "redirectUri": "x"}, "unknown \"oauth\" key 'redirectUri'"),
    ],
)
def test_a_bad_oauth_entry_is_a_one_line_error(
    oauth: dict[str, Any], needle: str, state: Path, tmp_path: Path
) -> None:
    config = tmp_path / "mcp.json"
    entry = {"type": "http", "url": "http://127.0.0.1:9/mcp", "oauth": oauth}
    config.write_text(json.dumps({"mcpServers": {NAME: entry}}))
    result = run(state, "tools", "--mcp-config", str(config))
    assert_one_line_usage_error(result, NAME, needle)
    assert "Traceback" not in result.stderr


@pytest.mark.anyio
async def test_a_token_that_expires_at_once_is_stored_as_expired(tmp_path: Path) -> None:
    from mcp.shared.auth import OAuthToken

    from asyncai.tools.mcp.oauth import TokenFile

    storage = TokenFile(
        "http://127.0.0.1:9/mcp", tmp_path / "token.json", "http://127.0.0.1:9/callback", None
    )
    await storage.set_tokens(OAuthToken(access_token="at", expires_in=0, refresh_token="rt"))
    assert storage.expires_at is not None and storage.expires_at <= time.time()


def test_no_token_reaches_the_log_the_transcript_the_audit_or_the_model(
    fake: OAuthFake, state: Path, tmp_path: Path
) -> None:
    from tests.fakes.openai_server import ScriptedOpenAI, call, text_reply, tool_reply

    login = run(state, "mcp", "login", NAME, *http(fake), browser=str(BROWSER))
    assert login.status == 0, login.stderr
    script = [tool_reply(call("run_code", {"code": WHOAMI})), text_reply("done")]
    with ScriptedOpenAI(script) as model:
        agent = run(state, "-v", "--base-url", model.base_url, "--model", "m", "-p", "who?", *http(fake))
        seen_by_model = json.dumps(model.requests)
    assert agent.status == 0, agent.stderr
    assert "client_id" in seen_by_model  # the tool ran, signed in, and its answer reached the model
    transcripts = [p for p in Path(os.environ["CLAUDE_CONFIG_DIR"]).rglob("*") if p.is_file()]
    assert any(p.suffix == ".jsonl" for p in transcripts), "the session was recorded"
    kept = token_file(state, fake.mcp_url)
    written = "".join(
        p.read_text(encoding="utf-8", errors="replace")
        for p in [*transcripts, *state.rglob("*")]
        if p.is_file() and p != kept
    )
    assert_no_secrets(fake, [login, agent])
    for secret in [*fake.issued_access_tokens, *fake.issued_refresh_tokens]:
        assert secret not in seen_by_model and secret not in written, f"a token ({secret[:6]}...) leaked"
    assert "mcp.tool_result" in agent.stderr  # the nested call's audit line was written and scanned


def test_a_server_refusing_the_configured_header_says_so_in_one_line(fake: OAuthFake, state: Path) -> None:
    config = state.parent / "mcp.json"
    entry = {"type": "http", "url": fake.mcp_url, "headers": {"Authorization": "Bearer not-a-token"}}
    config.write_text(json.dumps({"mcpServers": {NAME: entry}}))
    result = run(state, "run-code", "-c", WHOAMI, "--mcp-config", str(config), browser=str(BROWSER))
    assert_one_line_usage_error(
        result, f"cannot start MCP server '{NAME}'", "refused the credentials in its config (HTTP 401)"
    )
    assert fake.registrations == [] and not token_file(state, fake.mcp_url).exists()  # no sign-in tried


def test_sign_in_and_protocol_failures_are_one_line_reasons() -> None:
    import mcp.types as mt
    from mcp import MCPError
    from mcp.client.auth import OAuthFlowError

    from asyncai.tools.mcp.client import _describe

    discovery = OAuthFlowError("Protected resource metadata request failed: HTTP 500\nmore")
    assert _describe(discovery) == "sign-in failed: Protected resource metadata request failed: HTTP 500"
    versions = MCPError(mt.UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version: 2031-01-01")
    assert _describe(ExceptionGroup("g", [versions])) == (
        "no protocol version in common: Unsupported protocol version: 2031-01-01"
    )
