""" "Notify me on this device" in real Chromium: a person logged in with their own token presses
the button, the page subscribes this browser with the server's VAPID key and hands the
subscription to the server, and a new request then reaches that subscription signed and encrypted.

Chromium run offline has no push service to subscribe with, so the test stands in for that one
piece: an init script replaces `PushManager.subscribe` (and `getSubscription`) with one that
returns a subscription pointing at the test's own push endpoint (tests/support/push_endpoint.py),
with keys the test generated, and records the key the page subscribed with. Everything else is
real: the permission prompt (granted through the browser context), the service worker's
registration, the inbox's API and storage, the worker's push channel, VAPID and aes128gcm; and
the service worker shows what arrives (its push handler given the decrypted payload: a browser
offline receives no push to hand it). A notification's click needs a person's gesture to open a
window, which no script can make, so it is left to the link's own tests.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from playwright.async_api import Browser, Page, expect
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from config.settings import Settings
from storage.store import ProjectionStore
from tests.conftest import HistoryRecorder
from tests.support.browser_support import Inbox, screenshot, serve_inbox
from tests.support.helpers import eventually, start_and_wait
from tests.support.notify_support import write_policy
from tests.support.push_endpoint import PushEndpoint
from tests.support.scripts import ScriptedModel, calls_then_summary
from tests.support.ui_fixtures import add_person

POLICY = """
ask = ["write_file", "run_shell"]

[channels.phones]
kind = "push"
groups = ["*"]
"""

# The browser's push service, played by the test: subscribe() answers with the test's subscription.
FAKE_PUSH_MANAGER = """
(() => {
  const made = %s;
  let current = null;
  const bytes = (text) => Uint8Array.from(atob(text.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
  const b64url = (buffer) =>
    btoa(String.fromCharCode(...new Uint8Array(buffer))).replace(/\\+/g, "-").replace(/\\//g, "_").replace(/=+$/, "");
  window.__subscribedWith = [];
  window.__permissionAsked = 0;
  const ask = Notification.requestPermission.bind(Notification);
  Notification.requestPermission = () => ((window.__permissionAsked += 1), ask());
  PushManager.prototype.subscribe = async function (options) {
    const key = b64url(options.applicationServerKey);
    window.__subscribedWith.push({ userVisibleOnly: options.userVisibleOnly, key });
    current = {
      endpoint: made.endpoint,
      expirationTime: null,
      getKey: (name) => bytes(made.keys[name]).buffer,
      toJSON: () => made,
      unsubscribe: async () => ((current = null), true),
    };
    return current;
  };
  PushManager.prototype.getSubscription = async function () {
    return current;
  };
})();
"""

# In the service worker: its push handler given the payload as the browser would, then what it shows.
SHOW_PUSH = """async (payload) => {
  self.dispatchEvent(new PushEvent("push", { data: JSON.stringify(payload) }));
  for (let tries = 0; tries < 100; tries += 1) {
    const shown = await self.registration.getNotifications();
    if (shown.length) return shown.map((n) => ({ title: n.title, body: n.body, url: n.data.url, tag: n.tag }));
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return [];
}"""


async def logged_in_with_push(inbox: Inbox, token: str, subscription: dict[str, Any]) -> Page:
    """A person's own browser session, notifications allowed, its push service the test's."""
    page = await inbox.tab(permissions=["notifications"])
    await page.context.add_init_script(FAKE_PUSH_MANAGER % json.dumps(subscription))
    await page.goto(inbox.served.url + "/login")
    await page.fill("#token", token)
    await page.click("button[type=submit]")
    await expect(page.locator("#live-status")).to_have_text("live")
    return page


async def test_the_button_subscribes_this_browser_and_a_new_request_reaches_it(
    browser: Browser,
    env: WorkflowEnvironment,
    client: Client,
    settings: Settings,
    model: ScriptedModel,
    histories: HistoryRecorder,
    tmp_path: Path,
) -> None:
    endpoint = PushEndpoint().start()
    guarded = replace(settings, ui_token="shared-token", policy_file=write_policy(tmp_path / "policy.toml", POLICY))
    alice = await add_person(guarded, "alice", ["ops"])
    subscription = endpoint.subscription("alice-laptop")
    model.behaviour = calls_then_summary(("c1", "write_file", {"path": "notes.txt", "content": "from a push"}))
    try:
        async with serve_inbox(browser, env, guarded, client) as inbox:
            page = await logged_in_with_push(inbox, alice, subscription)
            button = page.locator("#push-button")
            await expect(button).to_have_text("Notify me on this device")
            assert await page.evaluate("window.__permissionAsked") == 0  # not on load: only when pressed
            await button.click()
            await expect(button).to_have_text("Stop notifying this device")
            await screenshot(page, "inbox-push-subscribed.png")

            assert await page.evaluate("window.__permissionAsked") == 1
            assert await page.evaluate("window.__subscribedWith") == [
                {"userVisibleOnly": True, "key": guarded.push_keys().public_key}
            ]
            worker = await page.wait_for_function("navigator.serviceWorker.controller")  # the page's, at scope "/"
            assert await worker.evaluate("(controller) => controller.scriptURL") == f"{inbox.served.url}/sw.js"
            assert [(s.endpoint, s.person) for s in await subscriptions(guarded)] == [
                (subscription["endpoint"], "alice")
            ]

            started = await start_and_wait(client, guarded, "write a note", histories, pending=1)
            [push] = await eventually(lambda: endpoint.count(1))
            assert push.path == "/push/alice-laptop" and push.verified, push.vapid_problem
            assert push.vapid_key == guarded.push_keys().public_key
            assert push.payload is not None
            assert push.payload["body"] == "write_file: notes.txt"
            assert push.payload["tag"] == started.pending[0]["request_id"]
            assert push.payload["url"].startswith(f"{guarded.link_base}/d/")

            # What the browser does with it: the page's service worker shows the decrypted payload.
            [service_worker] = page.context.service_workers
            shown = await service_worker.evaluate(SHOW_PUSH, push.payload)
            assert shown == [
                {
                    "title": "Approval needed",
                    "body": "write_file: notes.txt",
                    "url": push.payload["url"],
                    "tag": push.payload["tag"],
                }
            ]

            await button.click()  # pressed again: this browser is no longer notified
            await expect(button).to_have_text("Notify me on this device")
            assert await subscriptions(guarded) == []
            assert inbox.problems == []
    finally:
        endpoint.stop()


async def subscriptions(settings: Settings) -> list[Any]:
    store = ProjectionStore(settings.approvals_db)
    try:
        return await store.push_subscriptions(None)
    finally:
        await store.close()
