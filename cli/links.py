"""`link REQUEST_ID --for NAME`: print a person's one-time decision link (doors/decision_links.py).

From the projection alone (no worker, no Temporal): an unknown or decided request, or a person the
approver rules refuse, is refused in one line (exit 3). The URL goes to stdout by itself, so a
script can mail it; `--json` adds what it binds.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

from cli.errors import EXIT_OK, EXIT_USAGE, CliError, refused
from cli.output import note, print_json, shown
from cli.temporal import Session


async def link(args: argparse.Namespace, session: Session) -> int:
    from config.errors import ConfigError
    from core.refusals import DecisionRefused
    from doors.decision_links import mint_link

    try:
        minted = await mint_link(session.settings, session.store(), args.request_id, args.person)
    except DecisionRefused as err:
        raise refused(str(err)) from None
    except ConfigError as err:
        raise CliError(f"bad setting: {err}", EXIT_USAGE) from None
    except OSError as err:
        raise CliError(f"cannot read or make the decision link key: {err}") from None
    claims = minted.claims
    expires_at = datetime.fromtimestamp(claims.expires_at, UTC).isoformat()
    if args.json:
        print_json(
            {
                "url": minted.url,
                "request_id": claims.request_id,
                "person": claims.person,
                "token_id": claims.token_id,
                "args_hash": claims.args_hash,
                "expires_at": expires_at,
            }
        )
        return EXIT_OK
    print(minted.url)
    note(f"For {shown(claims.person)} to decide {shown(claims.request_id)} once, until {expires_at}.")
    return EXIT_OK
