"""Identity from a trusted reverse proxy: which peers are trusted, and in which headers they name a person.

TRUSTED_PROXIES (IPs or CIDR networks), PROXY_USER_HEADER and PROXY_GROUPS_HEADER, typed; how the
UI applies them to a request is ui/proxy_identity.py's part.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_proxies(text: str | None) -> tuple[Network, ...]:
    """`10.0.0.5, 10.1.0.0/16, ::1` as networks; ValueError names a bad entry."""
    found = []
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        try:
            found.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise ValueError(f"TRUSTED_PROXIES: {item!r} is not an IP address or network") from None
    return tuple(found)


@dataclass(frozen=True)
class ProxyIdentity:
    proxies: tuple[Network, ...]
    user_header: str = "X-Forwarded-User"
    groups_header: str = "X-Forwarded-Groups"

    @property
    def enabled(self) -> bool:
        return bool(self.proxies)

    def trusts(self, peer: str | None) -> bool:
        if peer is None:
            return False
        try:
            address = ipaddress.ip_address(peer)
        except ValueError:
            return False
        return any(address in network for network in self.proxies)

    def names(self) -> tuple[bytes, bytes]:
        return self.user_header.lower().encode("latin-1"), self.groups_header.lower().encode("latin-1")
