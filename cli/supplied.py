"""`approve --supply NAME=-` (and `edit --supply NAME=-`): the values of the arguments only a person
supplies (supplied_by_approver), read from stdin, one line each in the order given, or asked for
without echo when stdin is a terminal; never from the command line, which `ps` shows to every
user of the machine. They are sealed for the one request before anything is sent."""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import TYPE_CHECKING, TextIO

from cli.errors import EXIT_USAGE, CliError, refused

if TYPE_CHECKING:
    from config.settings import Settings

SUPPLY_HELP = "an argument you supply (a secret): its value is read from stdin, one line each (repeatable)"


def supply_name(text: str) -> str:
    """`--supply NAME=-`, the only form: a value on the command line is refused, and not repeated."""
    name, sep, rest = text.partition("=")
    if not sep or rest != "-" or not name.strip():
        raise argparse.ArgumentTypeError("the only form is NAME=-: the value is read from stdin, never from argv")
    return name.strip()


def read_values(names: list[str], stream: TextIO | None = None) -> dict[str, str]:
    """Each name's value: a line of stdin (its line ending dropped), or a prompt that does not echo."""
    stream = stream or sys.stdin
    doubled = sorted({name for name in names if names.count(name) > 1})
    if doubled:
        raise CliError(f"--supply {doubled[0]}=- is given twice", EXIT_USAGE)
    values: dict[str, str] = {}
    for name in names:
        if stream.isatty():
            values[name] = getpass.getpass(f"{name} (not shown): ")
            continue
        line = stream.readline()
        if not line:
            raise CliError(f"--supply {name}=-: stdin ended before its value (one line each, in order)", EXIT_USAGE)
        values[name] = line.removesuffix("\n").removesuffix("\r")
    return values


def sealed_supplies(names: list[str] | None, settings: Settings, request_id: str) -> dict[str, str]:
    """The values read and sealed for `request_id` ({} without --supply); an empty one is refused (3)."""
    from core.refusals import DecisionRefused
    from doors.supplied_values import sealed_values

    if not names:
        return {}
    try:
        return sealed_values(settings, request_id, read_values(names))
    except DecisionRefused as err:
        raise refused(str(err)) from None
