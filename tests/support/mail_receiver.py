"""A real SMTP server for the mail tests (aiosmtpd, in its own thread): it keeps every message it
takes, and can refuse a recipient, demand a login, offer STARTTLS or speak TLS from the start."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from email.message import EmailMessage
from email.parser import BytesParser
from email.policy import default
from pathlib import Path
from typing import Any, cast

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

from tests.support.processes import free_port


@dataclass
class Mail:
    sender: str
    recipients: list[str]
    message: EmailMessage
    tls: bool  # the session was encrypted (STARTTLS or smtps)
    login: str | None

    def part(self, subtype: str) -> str:
        body = self.message.get_body(preferencelist=(subtype,))
        assert body is not None and body.get_content_subtype() == subtype, f"no text/{subtype} part"
        return str(cast(Any, body).get_content())


@dataclass
class MailReceiver:
    """`refuse(address)`: the RCPT answer for an address ("451 ...", "550 ..."), None to take it.
    `logins`: user -> password, asked of every sender when set. `starttls`/`implicit_tls`: a server
    context (see `tls_pair`)."""

    port: int = field(default_factory=free_port)
    mails: list[Mail] = field(default_factory=list)
    refuse: Callable[[str], str | None] | None = None
    logins: dict[str, str] | None = None
    starttls: ssl.SSLContext | None = None
    implicit_tls: ssl.SSLContext | None = None
    _controller: Controller | None = None

    def url(self) -> str:
        return f"{'smtps' if self.implicit_tls else 'smtp'}://127.0.0.1:{self.port}"

    def start(self) -> MailReceiver:
        options: dict[str, Any] = {"server_hostname": "mail.test", "ssl_context": self.implicit_tls}
        if self.starttls is not None:
            options["tls_context"] = self.starttls
        if self.logins is not None:
            options.update(authenticator=self._authenticate, auth_required=True)
            # Over smtps aiosmtpd does not see its own TLS: it demands it only where STARTTLS is offered.
            options["auth_require_tls"] = self.starttls is not None
        self._controller = Controller(_Handler(self), hostname="127.0.0.1", port=self.port, **options)
        self._controller.start()
        return self

    def stop(self) -> None:
        if self._controller is not None:
            self._controller.stop()
            self._controller = None

    async def count(self, at_least: int) -> list[Mail]:
        """For `eventually`: the mails, once there are at least `at_least`."""
        return list(self.mails) if len(self.mails) >= at_least else []

    def _authenticate(self, server: Any, session: Any, envelope: Any, _mechanism: str, data: Any) -> AuthResult:
        if not isinstance(data, LoginPassword) or self.logins is None:
            return AuthResult(success=False, handled=False)
        user, password = data.login.decode(), data.password.decode()
        return AuthResult(success=self.logins.get(user) == password, handled=False, auth_data=user)


class _Handler:
    def __init__(self, receiver: MailReceiver) -> None:
        self._receiver = receiver

    async def handle_RCPT(self, server: Any, session: Any, envelope: Any, address: str, options: Any) -> str:  # noqa: N802
        refuse = self._receiver.refuse
        answer = refuse(address) if refuse is not None else None
        if answer is not None:
            return answer
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        message = cast(EmailMessage, BytesParser(policy=default).parsebytes(envelope.original_content))
        login = session.auth_data if isinstance(session.auth_data, str) else None
        tls = server.transport.get_extra_info("ssl_object") is not None
        mail = Mail(envelope.mail_from, list(envelope.rcpt_tos), message, tls, login)
        self._receiver.mails.append(mail)
        return "250 Message accepted"


def tls_pair(directory: Path) -> tuple[ssl.SSLContext, Path]:
    """A server context with a fresh self-signed certificate for 127.0.0.1, and the certificate's
    file (a sender trusts it as its CA)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "mail.test")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = directory / "mail-cert.pem", directory / "mail-key.pem"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_file, key_file)
    return context, cert_file
