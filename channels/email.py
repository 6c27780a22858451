"""An email channel: one message per request and person, each with that person's own one-time
decision link (its page, `GET /d/{token}`, shows the card; its form decides once).

`to` names addresses, people (their email from `starter.py users`) and `group:NAME` (every member
with an email). Each person is guarded on their own (`Reach.once`): a retry reaches those an
earlier attempt missed and nobody twice, and mail is never repeated on an unknown outcome. A
refused connection is retried with backoff; a refused login or a permanent (5xx) refusal is not.
Every text taken from a request is shown with its hidden characters escaped (core/visible.py),
and HTML-escaped in the HTML part.
"""

from __future__ import annotations

import asyncio
import hashlib
import html
import json
import smtplib
import ssl
from email.message import EmailMessage
from email.utils import formatdate
from functools import partial
from typing import TYPE_CHECKING, ClassVar, Literal
from urllib.parse import SplitResult, unquote, urlsplit

from pydantic import ConfigDict, Field, field_validator, model_validator

from channels.base import Channel, NotDelivered, Person, Reach, Sent, from_env
from core.conversation_model import NotificationInput, arguments_hash
from core.email_address import checked_address, is_address
from core.visible import reveal

if TYPE_CHECKING:
    import httpx

ARGUMENTS_SHOWN = 20_000  # characters of the arguments a mail carries; the link's page shows them all
DIFF_LINES_SHOWN = 40
PORTS = {"smtp": 25, "smtps": 465}
LOOPBACK = {"localhost", "127.0.0.1", "::1"}
HEADLINES = {  # the subject's words before the tool's name, and after it
    "request": ("Approval needed", "waits for you"),
    "reminder": ("Reminder", "still waits for approval"),
    "escalation": ("Escalated", "has waited too long for approval"),
    "expiry_warning": ("Expires soon", "still waits for approval"),
}


class EmailChannel(Channel):
    """`kind = "email"`: an SMTP server (`smtp_url` or `smtp_url_env`: `smtp://` with STARTTLS when
    offered, `smtps://`), the sender (`from`) and the recipients (`to`)."""

    model_config = ConfigDict(populate_by_name=True)

    kind: Literal["email"]
    smtp_url: str | None = Field(default=None, repr=False, description="smtp://[user:password@]host[:port], smtps://")
    smtp_url_env: str | None = Field(default=None, description="the variable holding the SMTP URL")
    username_env: str | None = Field(default=None, description="the variable holding the login (else the URL's)")
    password_env: str | None = Field(default=None, description="the variable holding the password (else the URL's)")
    tls_ca_file: str | None = Field(default=None, description="a CA bundle to trust besides the system's")
    sender: str = Field(alias="from", description="the sender's address")
    to: list[str] = Field(min_length=1, description="addresses, people's names, group:NAME")

    name: ClassVar[str] = "email"
    repeats_safely: ClassVar[bool] = False
    guards_each_person: ClassVar[bool] = True

    @field_validator("sender")
    @classmethod
    def _sender(cls, value: str) -> str:
        return checked_address(value)

    @field_validator("to")
    @classmethod
    def _recipients(cls, entries: list[str]) -> list[str]:
        checked = [checked_address(e) if is_address(e) else e.strip() for e in entries]
        if any(not entry or entry == "group:" for entry in checked):
            raise ValueError("a recipient is an address, a person's name or group:NAME, never empty")
        return checked

    @model_validator(mode="after")
    def _complete(self) -> EmailChannel:
        if (self.smtp_url is None) == (self.smtp_url_env is None):
            raise ValueError("an email channel needs exactly one of smtp_url or smtp_url_env")
        if self.smtp_url is not None:
            _server(self.smtp_url)
        return self

    async def send(self, http: httpx.AsyncClient, notification: NotificationInput, reach: Reach) -> Sent:
        try:
            server = _server(self.smtp_url or from_env(self.smtp_url_env))  # a missing variable: LookupError
        except ValueError as err:
            raise NotDelivered(str(err), retryable=False) from None
        login = self._login(server)
        people = await reach.people(self.to)
        session = SmtpSession(server, login, self.timeout_seconds, self.tls_ca_file)
        refused: list[NotDelivered] = []
        try:
            for person in people:
                try:
                    post = partial(self._post, session, notification, person, reach)
                    await reach.once(person.name or person.address, post)
                except NotDelivered as err:
                    if not session.ready:
                        raise  # no session (down, login refused): the same for everyone after
                    refused.append(err)  # one recipient refused: the others still get theirs
        finally:
            await asyncio.to_thread(session.close)
        if refused:  # those sent are guarded: a retry sends only these, and a temporary refusal is retried
            raise next((err for err in refused if err.retryable), refused[0])
        return Sent(200)

    async def _post(self, session: SmtpSession, notification: NotificationInput, person: Person, reach: Reach) -> None:
        """One person's mail, with a link made for it only now that it is sent."""
        await asyncio.to_thread(session.send, self._message(notification, person, reach))

    def _login(self, server: SplitResult) -> tuple[str, str] | None:
        user = unquote(server.username) if server.username else None
        user = user or (from_env(self.username_env) if self.username_env else None)
        if user is None:
            return None
        password = unquote(server.password) if server.password else None
        password = password or (from_env(self.password_env) if self.password_env else None)
        if password is None:
            raise LookupError(f"{user} has no password: put it in the URL or name a password_env")
        return user, password

    def _message(self, notification: NotificationInput, person: Person, reach: Reach) -> EmailMessage:
        link = reach.decision_link(person)
        part = person.name or person.address
        plain, rich = email_bodies(notification, link, decides=person.name is not None and link != reach.card_link)
        domain = self.sender.rpartition("@")[2]
        message = EmailMessage()
        message["Subject"] = email_subject(notification)
        message["From"], message["To"] = self.sender, person.address
        message["Date"] = formatdate(localtime=False)
        message["Message-ID"] = _message_id(notification.key, part, domain)
        if notification.kind != "request":  # a reminder threads under the request's own mail
            first = _message_id(f"{notification.request_id}:{notification.channel}:request", part, domain)
            message["In-Reply-To"], message["References"] = first, first
        message["Auto-Submitted"] = "auto-generated"
        message["X-Approval-Request"] = reveal(notification.request_id).text
        message.set_content(plain)
        message.add_alternative(rich, subtype="html")
        return message


def email_subject(notification: NotificationInput) -> str:
    """`Reminder 2: write_file still waits for approval [REQUEST_ID]`: the kind first, for filters."""
    before, after = HEADLINES[notification.kind]
    number = f" {notification.number}" if notification.number > 1 else ""
    tool, request_id = reveal(notification.tool_name).text, reveal(notification.request_id).text
    return f"{before}{number}: {tool} {after} [{request_id}]"


def email_bodies(notification: NotificationInput, link: str, decides: bool) -> tuple[str, str]:
    """The plain text and the HTML of one person's mail: the tool, its exact arguments, their hash,
    who asked and why, and the person's link."""
    arguments = json.dumps(notification.arguments, indent=2, sort_keys=True, ensure_ascii=False)
    if len(arguments) > ARGUMENTS_SHOWN:
        arguments = f"{arguments[:ARGUMENTS_SHOWN]}\n... ({len(arguments)} characters: the page shows them all)"
    why, preview = notification.why, notification.preview
    facts = [
        ("Arguments hash", arguments_hash(notification.arguments)),
        ("Requested by", f"conversation {notification.conversation_id} (request {notification.request_id})"),
        ("Task", why.parent_task if why else None),
        ("Asked", why.user_message if why else None),
        ("Said", why.assistant_text if why else None),
        ("Will change", preview.summary if preview else None),
        ("May approve", ", ".join(notification.approvers) if notification.approvers is not None else "anyone"),
        ("Expires", notification.expires_at.strftime("%Y-%m-%d %H:%M UTC")),
    ]
    shown = [(label, reveal(value)) for label, value in facts if value]
    tool, args = reveal(notification.tool_name), reveal(arguments, multiline=True)
    diff = reveal("\n".join((preview.diff or "").splitlines()[:DIFF_LINES_SHOWN]), multiline=True) if preview else None
    hidden = tool.hidden or args.hidden or any(r.hidden for _, r in shown) or bool(diff and diff.hidden)
    note = "Contains hidden characters, shown escaped (like \\u202e); what runs is the text as written."
    if decides:
        action = "Approve or deny on your own page for this request (the link is yours alone and works once):"
    else:
        action = "Open the request in the inbox (this address is no known person's, so the mail decides nothing):"
    headline = HEADLINES[notification.kind][0]
    plain = [f"{headline}: {tool.text}", *([note] if hidden else []), "", "Arguments (exactly what will run):"]
    plain += [args.text, ""] + [f"{label}: {value.text}" for label, value in shown]
    plain += [*(["", "Diff (first lines):", diff.text] if diff and diff.text else []), "", action, link, ""]
    e = html.escape
    rows = "".join(f"<tr><th align=left>{e(label)}</th><td>{e(value.text)}</td></tr>" for label, value in shown)
    buttons = (
        f'<a href="{e(link)}#allow" style="{BUTTON}background:#1a7f37">Approve</a> '
        f'<a href="{e(link)}#deny" style="{BUTTON}background:#cf222e">Deny</a>'
        if decides
        else f'<a href="{e(link)}" style="{BUTTON}background:#0969da">Open the request</a>'
    )
    rich = f"""<!doctype html><html><body style="font-family:sans-serif">
<h2>{e(headline)}: <code>{e(tool.text)}</code></h2>
{f"<p><strong>{e(note)}</strong></p>" if hidden else ""}
<p>Arguments (exactly what will run):</p>
<pre style="background:#f6f8fa;padding:8px;white-space:pre-wrap">{e(args.text)}</pre>
<table>{rows}</table>
{f'<pre style="background:#f6f8fa;padding:8px">{e(diff.text)}</pre>' if diff and diff.text else ""}
<p>{e(action)}</p>
<p>{buttons}</p>
<p style="color:#57606a">Opening the page decides nothing: you decide there.</p>
</body></html>
"""
    return "\n".join(plain), rich


BUTTON = "color:#fff;padding:8px 16px;text-decoration:none;border-radius:6px;"


class SmtpSession:
    """One connection for one send, opened at the first message, used from worker threads one at a time."""

    def __init__(self, server: SplitResult, login: tuple[str, str] | None, timeout: float, ca_file: str | None) -> None:
        self._server, self._login, self._timeout, self._ca_file = server, login, timeout, ca_file
        self._smtp: smtplib.SMTP | None = None
        self.ready = False  # connected, encrypted when it can be, and logged in

    def send(self, message: EmailMessage) -> None:
        smtp = self._smtp if self.ready and self._smtp is not None else self._connect()
        try:
            refused = smtp.send_message(message)
        except smtplib.SMTPRecipientsRefused as err:
            code, said = next(iter(err.recipients.values()))
            raise _refusal("refused the recipient", code, said) from None
        except smtplib.SMTPResponseException as err:  # the sender or the message refused: nothing taken
            raise _refusal("refused the message", err.smtp_code, err.smtp_error) from None
        if refused:
            code, said = next(iter(refused.values()))
            raise _refusal("refused the recipient", code, said)

    def _connect(self) -> smtplib.SMTP:
        host, port = self._server.hostname or "", self._server.port or PORTS[self._server.scheme]
        context = ssl.create_default_context(cafile=self._ca_file)
        try:
            if self._server.scheme == "smtps":
                smtp: smtplib.SMTP = smtplib.SMTP_SSL(host, port, timeout=self._timeout, context=context)
            else:
                smtp = smtplib.SMTP(host, port, timeout=self._timeout)
            self._smtp = smtp
            smtp.ehlo()
            secure = self._server.scheme == "smtps"
            if not secure and smtp.has_extn("starttls"):
                smtp.starttls(context=context)
                smtp.ehlo()
                secure = True
            if self._login is not None:
                if not secure and host not in LOOPBACK:
                    raise NotDelivered(f"{host}:{port} offers no STARTTLS: no password in clear", retryable=False)
                smtp.login(*self._login)
            self.ready = True
        except smtplib.SMTPAuthenticationError as err:
            raise _refusal("refused the login", err.smtp_code, err.smtp_error, retried=False) from None
        except smtplib.SMTPResponseException as err:
            raise _refusal("refused the session", err.smtp_code, err.smtp_error) from None
        except smtplib.SMTPNotSupportedError:
            raise NotDelivered(f"{host}:{port} offers no login (AUTH)", retryable=False) from None
        except ssl.SSLError as err:
            raise NotDelivered(f"TLS with {host}:{port} failed: {err}", retryable=False) from None
        except (OSError, smtplib.SMTPException) as err:  # refused, unreachable, timed out, hung up
            raise NotDelivered(f"cannot connect to {host}:{port}: {err}", retryable=True) from None
        return smtp

    def close(self) -> None:
        if self._smtp is not None:
            try:
                self._smtp.quit()
            except (OSError, smtplib.SMTPException):
                self._smtp.close()  # the messages sent were taken already


def _refusal(what: str, code: int, said: bytes | str, retried: bool | None = None) -> NotDelivered:
    text = said.decode(errors="replace") if isinstance(said, bytes) else str(said)
    retryable = 400 <= code < 500 if retried is None else retried
    return NotDelivered(f"the SMTP server {what}: {code} {' '.join(text.split())}", retryable=retryable)


def _server(url: str) -> SplitResult:
    """The SMTP URL, checked: one line saying what is wrong."""
    parts = urlsplit(url)
    try:
        parts.port  # noqa: B018 (a bad port raises here)
    except ValueError:
        raise ValueError("smtp_url has a bad port") from None
    if parts.scheme not in PORTS or not parts.hostname:
        raise ValueError("smtp_url must be smtp://host[:port] or smtps://host[:port]")
    return parts


def _message_id(key: str, part: str, domain: str) -> str:
    return f"<{hashlib.sha256(f'{key}:{part}'.encode()).hexdigest()[:32]}@{domain}>"
