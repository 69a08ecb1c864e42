"""Annotator accounts: create them, or hand out the organisation's invite link.

Label Studio user ids are mapped to e-mails in the ``annotator`` table; every report names
annotators by e-mail.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sqlmodel import Session

from annotation.client import LabelStudioClient
from storage.errors import InputError
from storage.repo.annotations import get_or_create_annotator

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


@dataclass(frozen=True)
class AnnotatorAccount:
    """A Label Studio user known to the workspace."""

    ls_user_id: int
    email: str
    created: bool
    password: str | None = None
    """Set only when this call gave the account a password (local server)."""


def sync_annotators(*, client: LabelStudioClient, session: Session) -> list[AnnotatorAccount]:
    """Record every Label Studio user (id → e-mail) in the workspace."""
    out = []
    for user in client.list_users():
        get_or_create_annotator(user.id, email=user.email or None, session=session)
        out.append(AnnotatorAccount(user.id, user.email, created=False))
    return out


def create_annotators(
    emails: Sequence[str],
    *,
    client: LabelStudioClient,
    session: Session,
    workspace: Path | None = None,
    set_passwords: bool = False,
) -> list[AnnotatorAccount]:
    """Create accounts for these e-mails (existing ones are reused).

    Args:
        emails: the annotators' e-mail addresses.
        client: the Label Studio client.
        session: the workspace session.
        workspace: the workspace whose local server can set passwords.
        set_passwords: give each new account a generated password (only the local server
            can: accounts created through the API cannot log in without one); otherwise
            annotators sign in through the invite link.

    Raises:
        InputError: an address is not an e-mail address.
    """
    for email in emails:
        if not _EMAIL.match(email):
            raise InputError(f"{email!r} is not an e-mail address.")
    existing = {u.email.lower(): u for u in client.list_users() if u.email}
    out = []
    for email in emails:
        user = existing.get(email.lower())
        created = user is None
        if user is None:
            username = re.sub(r"[^A-Za-z0-9_.-]", "_", email.split("@")[0])[:30] or "annotator"
            user = client.create_user(email=email, username=f"{username}-{secrets.token_hex(2)}")
        password = None
        if created and set_passwords:
            from annotation.server import reset_password

            if workspace is None:
                raise InputError("Setting passwords needs the workspace of a local server.")
            password = secrets.token_urlsafe(12)
            reset_password(workspace, email=email, password=password)
        get_or_create_annotator(user.id, email=user.email or email, session=session)
        out.append(AnnotatorAccount(user.id, user.email or email, created, password))
    return out


def invite_link(*, client: LabelStudioClient) -> str:
    """The organisation's sign-up link for annotators."""
    return client.invite_link()
