"""The pure parts of notifications: routing per rule and per group, the plan's timers, the configuration's
checks, and both signature schemes (ours for webhooks, Slack's for its buttons)."""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

import pytest

from channels.base import card_url
from channels.webhook import sign
from config.settings import ConfigError, Settings
from core.notify_plan import plan_for
from core.policy_rules import PolicyRules
from core.tool_specs import TOOL_SPECS
from tests.support.notify_support import Delivery, verify_webhook
from ui.errors import Unauthorized
from ui.slack import slack_signature, verify_slack

RULES = PolicyRules.model_validate(
    {
        "channels": {
            "ops-hook": {"kind": "webhook", "groups": ["ops"], "url": "ignored by the workflow"},
            "all-slack": {"kind": "slack", "groups": ["*"]},
            "leads-hook": {"groups": ["leads"]},
            "audit": {},
        },
        "approvers": [
            {
                "match": ["run_shell(kubectl *)"],
                "approvers": ["group:ops"],
                "notify": ["audit"],
                "remind_after": 60,
                "reminders": 3,
                "escalate_after": 600,
                "escalate_to": ["group:leads"],
            },
            {"match": ["run_shell"], "approvers": ["bob"], "warn_before_expiry": 30, "remind_after": 5},
        ],
    }
)
SHELL = TOOL_SPECS["run_shell"]


def test_channels_add_up_over_rules_and_groups_and_each_timer_comes_from_the_first_rule_setting_it() -> None:
    plan = plan_for(RULES, SHELL, {"command": "kubectl apply"}, ["group:ops", "bob"])
    assert plan is not None
    assert plan.channels == ["audit", "all-slack", "ops-hook"]
    assert (plan.remind_after, plan.reminders, plan.warn_before_expiry) == (60, 3, 30)
    assert (plan.escalate_after, plan.escalate_groups, plan.escalate_channels) == (600, ["leads"], ["leads-hook"])
    other = plan_for(RULES, SHELL, {"command": "ls"}, ["bob"])
    assert other is not None and other.channels == ["all-slack"] and other.remind_after == 5
    assert other.escalate_after is None and other.escalate_channels == []


def test_no_channel_and_no_timer_means_no_plan() -> None:
    assert plan_for(PolicyRules(), SHELL, {"command": "ls"}, None) is None
    quiet = PolicyRules.model_validate({"approvers": [{"match": ["run_shell"], "approvers": ["bob"]}]})
    assert plan_for(quiet, SHELL, {"command": "ls"}, ["bob"]) is None
    assert "url" not in RULES.channels["ops-hook"].model_dump(), "a channel's URL never enters the workflow"


def test_approver_rules_may_only_name_channels_that_exist(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('[[approvers]]\nmatch = ["run_shell"]\napprovers = ["bob"]\nnotify = ["nowhere"]\n')
    with pytest.raises(ConfigError, match="unknown channels"):
        Settings(policy_file=str(policy)).load_notify()
    policy.write_text('[channels.hook]\nkind = "webhook"\nurl = "http://x"\n')
    with pytest.raises(ConfigError, match="secret"):
        Settings(policy_file=str(policy)).load_notify()


def test_the_webhook_signature_is_hmac_sha256_over_timestamp_dot_body() -> None:
    body = b'{"request_id": "perm_c_1"}'
    header = sign("s3cret", 1_700_000_000, body)
    expected = hmac.new(b"s3cret", b"1700000000." + body, hashlib.sha256).hexdigest()
    assert header == f"t=1700000000,v1={expected}"
    delivery = Delivery("/hook", {"x-approvals-signature": header}, body)
    assert not verify_webhook(delivery, "s3cret"), "too old"
    assert verify_webhook(delivery, "s3cret", tolerance=float("inf"))
    assert not verify_webhook(Delivery("/hook", delivery.headers, body + b" "), "s3cret", tolerance=float("inf"))
    assert card_url("https://a.example/", "perm_c/1") == "https://a.example/approvals/perm_c%2F1"


def test_slack_requests_need_the_signature_and_a_timestamp_within_five_minutes() -> None:
    body = b"payload=%7B%7D"
    good = {"x-slack-request-timestamp": "1000", "x-slack-signature": slack_signature("k", "1000", body)}
    verify_slack("k", good, body, now=1000 + 299)
    for headers, now in [
        (good, 1000 + 301),
        (good, 1000 - 301),
        ({**good, "x-slack-signature": slack_signature("other", "1000", body)}, 1000),
        ({**good, "x-slack-request-timestamp": "1001"}, 1000),
        ({"x-slack-signature": good["x-slack-signature"]}, 1000),
    ]:
        with pytest.raises(Unauthorized):
            verify_slack("k", headers, body, now=now)
