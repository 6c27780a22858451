"""`ui`, `rebuild-projection` and `collect-payloads`: their modules are imported only when asked for."""

from __future__ import annotations

import argparse
import dataclasses

from cli.errors import EXIT_OK, CliError
from cli.output import print_json
from cli.temporal import Session


def ui(args: argparse.Namespace, session: Session) -> int:
    """Synchronous on purpose: the UI server runs its own event loop and owns Ctrl-C."""
    try:
        from ui.server import serve
    except ImportError as err:
        raise CliError(f"the approvals UI is not available (ui/server.py could not be imported: {err})") from None
    serve(session.settings)
    return EXIT_OK


async def rebuild_projection(args: argparse.Namespace, session: Session) -> int:
    try:
        from maintenance.rebuild import rebuild_projection as rebuild
    except ImportError as err:
        raise CliError(f"rebuilding the projection is not available (maintenance/rebuild.py: {err})") from None
    client = await session.client()
    report = await rebuild(client, session.settings)
    summary = dataclasses.asdict(report) if dataclasses.is_dataclass(report) else {"report": report}
    if args.json:
        print_json(summary)
        return EXIT_OK
    print(f"Rebuilt the projection at {session.settings.approvals_db} from Temporal's history.")
    for key, value in summary.items():
        print(f"  {key.replace('_', ' ')}: {value}")
    return EXIT_OK


async def collect_payloads(args: argparse.Namespace, session: Session) -> int:
    from maintenance.payload_gc import collect_payloads as collect

    report = dataclasses.asdict(await collect(await session.client(), session.settings))
    if args.json:
        print_json(report)
        return EXIT_OK
    print(f"Collected the payload store {session.settings.payload_store_location}.")
    for key, value in report.items():
        print(f"  {key.replace('_', ' ')}: {value}")
    return EXIT_OK
