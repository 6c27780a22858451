"""A browser's Web Push subscription and whose it is: the push service's endpoint for that browser
and the keys a push is encrypted to (RFC 8291); and the service's VAPID keys a push is signed with
(RFC 8292, config/push_keys.py). The inbox checks a subscription where it comes in
(ui/push_routes.py), so storage and the push channel hold only ones a browser could have made."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class PushSubscription:
    endpoint: str
    person: str
    p256dh: str  # base64url, as the browser gave it
    auth: str

    def info(self) -> dict[str, object]:
        """The subscription in the browser's own JSON shape (`PushSubscription.toJSON()`, what pywebpush takes)."""
        return {"endpoint": self.endpoint, "keys": {"p256dh": self.p256dh, "auth": self.auth}}


@dataclass(frozen=True)
class VapidKeys:
    private_key: str = field(repr=False)  # the 32-byte private scalar, base64url (py_vapid's Vapid.from_string)
    public_key: str  # the uncompressed point, base64url: the browsers' applicationServerKey
    subject: str  # the JWT's `sub`: a mailto: or https: contact for the push services
