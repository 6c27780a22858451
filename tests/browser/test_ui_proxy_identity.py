"""Identity from a trusted reverse proxy, against a real `starter.py ui` process: with
TRUSTED_PROXIES set, the proxy's address may name a person and their groups in headers (no token
needed), and every other peer that sends those headers is refused with 403 and changes nothing.
The proxy is a client bound to 127.0.0.2; anyone else connects from 127.0.0.1. In Chromium, the
page says who the proxy named and asks for no name."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Browser, expect
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from config.settings import ConfigError, Settings
from tests.conftest import HistoryRecorder
from tests.support.browser_support import serve_inbox
from tests.support.helpers import approval_row, rows, start_and_wait, wait_status, workspace_of
from tests.support.processes import REPO_ROOT, _kill, free_port, process_env, wait_for_port
from tests.support.scripts import ScriptedModel, calls_then_summary
from tests.support.ui_fixtures import add_person
from ui.proxy_identity import parse_proxies
from worker import build_worker

TOKEN = "shared-ui-token"
PROXY = "127.0.0.2"
POLICY = """
ask = ["run_shell"]
[[approvers]]
match = ["run_shell(kubectl *)"]
approvers = ["group:sre"]
"""


def test_proxy_addresses_are_ips_or_networks_and_a_bad_one_is_a_config_error() -> None:
    networks = parse_proxies(" 10.0.0.5, 10.1.0.0/16,::1 ,")
    assert [str(n) for n in networks] == ["10.0.0.5/32", "10.1.0.0/16", "::1/128"]
    assert parse_proxies(None) == () and parse_proxies("") == ()
    with pytest.raises(ConfigError, match="not-an-ip"):
        Settings(trusted_proxies="10.0.0.1, not-an-ip").proxy_identity()
    identity = Settings(trusted_proxies="10.1.0.0/16").proxy_identity()
    assert identity.trusts("10.1.2.3") and not identity.trusts("10.2.0.1") and not identity.trusts(None)


@pytest.fixture
def gated(settings: Settings, tmp_path: Path) -> Settings:
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    return replace(settings, policy_file=str(policy), ui_token=TOKEN)


@pytest.fixture
def ui_port(gated: Settings, client: Client, tmp_path: Path) -> Iterator[int]:
    port = free_port()
    target = client.service_client.config.target_host
    env = process_env(gated, target, UI_PORT=str(port), UI_TOKEN=TOKEN, TRUSTED_PROXIES=PROXY)
    log = (tmp_path / "ui.log").open("ab")
    proc = subprocess.Popen(
        [sys.executable, "starter.py", "ui"], cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    try:
        wait_for_port(port)
        yield port
    finally:
        _kill(proc, signal.SIGTERM)


@pytest.fixture
async def peers(ui_port: int) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient]]:
    base = f"http://127.0.0.1:{ui_port}"
    proxy_transport = httpx.AsyncHTTPTransport(local_address=PROXY)
    async with (
        httpx.AsyncClient(base_url=base, transport=proxy_transport, timeout=30) as proxy,
        httpx.AsyncClient(base_url=base, timeout=30) as other,
    ):
        yield proxy, other


def person(name: str, groups: str | None = None) -> dict[str, str]:
    headers = {"X-Forwarded-User": name}
    if groups is not None:
        headers["X-Forwarded-Groups"] = groups
    return headers


async def test_only_the_configured_proxy_may_name_who_decides(
    client: Client,
    gated: Settings,
    model: ScriptedModel,
    histories: HistoryRecorder,
    peers: tuple[httpx.AsyncClient, httpx.AsyncClient],
) -> None:
    proxy, other = peers
    await add_person(gated, "sam", ["sre"])
    model.behaviour = calls_then_summary(("c1", "run_shell", {"command": "kubectl version > ran.txt"}))

    # The proxy names people: with the groups it sends, or else the groups `users` gives the name.
    me = await proxy.get("/api/session", headers=person("olly", "dev, qa"))
    assert me.status_code == 200 and me.json()["principal"] == {"name": "olly", "groups": ["dev", "qa"]}
    known = await proxy.get("/api/session", headers=person("sam"))
    assert known.json()["principal"] == {"name": "sam", "groups": ["sre"]}
    page = await proxy.get("/", headers=person("olly", "dev"))
    assert page.status_code == 200 and "Approvals inbox" in page.text, "no login page: the proxy authenticated"
    # Anyone else: the headers are refused outright, and without them the token is still needed.
    spoofed = await other.get("/api/session", headers=person("sam", "sre"))
    assert spoofed.status_code == 403 and spoofed.json()["error"]["type"] == "UntrustedIdentityHeader"
    assert (await other.get("/api/session")).status_code == 401
    assert (await proxy.get("/api/session")).status_code == 401, "the proxy without a user header is no one"

    async with build_worker(client, gated):
        started = await start_and_wait(client, gated, "deploy", histories, pending=1)
        cid, [row] = started.conversation_id, started.pending
        path = f"/api/approvals/{row['request_id']}/decision"
        allow = {"decision": "allow"}

        with_token = {**person("sam", "sre"), "Authorization": f"Bearer {TOKEN}"}
        forged = await other.post(path, json=allow, headers=with_token)
        assert forged.status_code == 403 and forged.json()["error"]["type"] == "UntrustedIdentityHeader"
        outsider = await proxy.post(path, json=allow, headers=person("olly", "dev"))
        assert outsider.status_code == 403 and outsider.json()["error"]["type"] == "NotAnApprover"
        assert approval_row(gated.approvals_db, row["request_id"])["decision"] is None
        assert rows(gated.approvals_db, "SELECT * FROM ui_decision_claims") == []

        # Behind TLS: the proxy's X-Forwarded-Proto makes the page's https Origin this UI's own.
        origin = f"https://127.0.0.1:{proxy.base_url.port}"
        tls = {**person("sam", "sre"), "X-Forwarded-Proto": "https", "Origin": origin, "Sec-Fetch-Site": "same-origin"}
        decided = await proxy.post(path, json=allow, headers=tls)
        assert decided.status_code == 200, decided.text
        await wait_status(client, cid, "idle")

    resolved = approval_row(gated.approvals_db, row["request_id"])
    assert (resolved["decision"], resolved["decided_by"], resolved["execution_state"]) == ("allow", "sam", "done")
    assert (workspace_of(gated, cid) / "ran.txt").exists()


async def test_the_page_says_who_the_proxy_named_and_asks_no_name(
    browser: Browser, env: WorkflowEnvironment, settings: Settings
) -> None:
    proxied = replace(settings, ui_token=TOKEN, trusted_proxies="127.0.0.1")
    async with serve_inbox(browser, env, proxied) as inbox:
        page = await inbox.tab(extra_http_headers=person("sam", "sre,oncall"))
        await page.goto(inbox.served.url)
        await expect(page.locator("#signed-in")).to_have_text("Signed in as sam (sre, oncall)")
        await expect(page.locator("#decider-label")).to_be_hidden()
        assert page.url.rstrip("/") == inbox.served.url, "no login: the proxy authenticated the person"
