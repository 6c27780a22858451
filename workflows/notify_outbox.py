"""Notifications on their way: started, not yet delivered, and carried across continue-as-new.

A notification is never awaited by the request that sent it: its activity retries on its own
while the conversation goes on. When the conversation continues as new, the run that started it
ends and its retries with it, so the outbox hands every notification still on its way to the next
run, which starts it again. Each holds its key and the receiver's ledger dedups by key, so one
that the old run did deliver meanwhile is not sent twice.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError

from workflows import patches

with workflow.unsafe.imports_passed_through():
    from core.conversation_model import NotificationInput
    from workflows import activity_calls as calls


class NotificationOutbox:
    def __init__(self) -> None:
        self._on_the_way: dict[str, NotificationInput] = {}
        self.deliveries: list[asyncio.Future[None]] = []  # started, never awaited by a request

    def send(self, notification: NotificationInput) -> None:
        self._on_the_way[notification.key] = notification
        self.deliveries.append(asyncio.ensure_future(self._deliver(notification)))

    def resume(self, carried: list[NotificationInput]) -> None:
        """A new run starts again what the last one left on its way (those not yet expired)."""
        if not carried or not workflow.patched(patches.NOTIFICATIONS_CARRIED):
            return
        for notification in carried:
            if notification.expires_at > workflow.now():
                self.send(notification)

    def carried(self) -> list[NotificationInput]:
        return list(self._on_the_way.values())

    async def _deliver(self, notification: NotificationInput) -> None:
        """A notification that cannot be delivered is logged; it never fails the workflow or the turn."""
        give_up_after = max(notification.expires_at - workflow.now(), timedelta(0))
        try:
            await calls.notify(notification, give_up_after)
        except ActivityError as err:
            workflow.logger.warning("notification %s not delivered: %s", notification.key, err.__cause__ or err)
        finally:
            self._on_the_way.pop(notification.key, None)
