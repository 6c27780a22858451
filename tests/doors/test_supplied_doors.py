"""The doors' side of supplied arguments: `--supply NAME=-` is the only form (a value on the command
line is refused without being repeated), values come from stdin one line each, an empty one is
refused, every value leaves the door sealed for its request, and no grant is offered or made from a
call whose values a person supplies."""

from __future__ import annotations

import argparse
import io
from dataclasses import replace
from pathlib import Path

import pytest

from cli.errors import EXIT_USAGE, CliError
from cli.parser import build_parser
from cli.supplied import read_values, supply_name
from config.settings import Settings
from config.supplied_secret import unseal
from core.refusals import DecisionRefused
from doors.grant_checks import offer
from doors.supplied_values import grant_refusal, sealed_values

ROW = {
    "request_id": "perm_c1_call",
    "tool_name": "mcp__vault__login",
    "arguments": {"user": "bob"},
    "tool": {"source": "mcp"},
    "supplied_by_approver": ["password"],
}


def test_supply_takes_name_dash_only_and_never_repeats_a_value_given_on_the_command_line() -> None:
    assert supply_name("password=-") == "password"
    for wrong in ("password=hunter2", "password", "=-", "password=--"):
        with pytest.raises(argparse.ArgumentTypeError) as refused:
            supply_name(wrong)
        assert "hunter2" not in str(refused.value) and "NAME=-" in str(refused.value)
    args = build_parser().parse_args(["approve", "perm_c1_call", "--supply", "password=-", "--supply", "otp=-"])
    assert args.supply == ["password", "otp"]
    with pytest.raises(CliError) as usage:
        build_parser().parse_args(["approve", "perm_c1_call", "--supply", "password=hunter2"])
    assert usage.value.code == EXIT_USAGE and "hunter2" not in str(usage.value)


def test_values_are_read_one_line_each_in_order() -> None:
    assert read_values(["password", "otp"], io.StringIO("s3cret with spaces\r\n123456\n")) == {
        "password": "s3cret with spaces",
        "otp": "123456",
    }
    with pytest.raises(CliError) as short:
        read_values(["password", "otp"], io.StringIO("only one\n"))
    assert short.value.code == EXIT_USAGE and "otp" in str(short.value)
    with pytest.raises(CliError) as doubled:
        read_values(["password", "password"], io.StringIO("a\nb\n"))
    assert "given twice" in str(doubled.value)


def test_a_door_seals_each_value_for_its_request_and_refuses_an_empty_one(tmp_path: Path) -> None:
    settings = replace(Settings(), approvals_db=tmp_path / "approvals.db")
    sealed = sealed_values(settings, "perm_c1_call", {"password": "hunter2"})
    assert "hunter2" not in sealed["password"]
    assert unseal(settings.supplied_secret_key(), "perm_c1_call", "password", sealed["password"]) == "hunter2"
    with pytest.raises(DecisionRefused) as empty:
        sealed_values(settings, "perm_c1_call", {"password": ""})
    assert "nothing was supplied for password" in str(empty.value)
    with pytest.raises(DecisionRefused) as not_text:  # JSON may carry a lone surrogate
        sealed_values(settings, "perm_c1_call", {"password": "\ud800"})
    assert "not valid text" in str(not_text.value)


def test_no_grant_is_offered_or_made_from_a_call_whose_values_a_person_supplies() -> None:
    assert offer(ROW) is None
    assert grant_refusal(ROW) == (
        "perm_c1_call needs password supplied by a person on every call: approve this call alone"
    )
    assert grant_refusal(dict(ROW, supplied_by_approver=[])) is None
