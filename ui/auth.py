"""Sign-in, when Docent serves a network (README, "Serving a network").

Without an ``[auth]`` section in ``.streamlit/secrets.toml`` Docent asks for nothing:
``.streamlit/config.toml`` binds it to 127.0.0.1, so only this machine reaches it.

With ``[auth]`` (Streamlit's own OpenID Connect sign-in, ``st.login``), every page needs a
signed-in visitor; until then app.py routes to ``sign_in_page`` alone, so a visitor sees
no document, conversation or setting, whatever URL they open. ``[docent] allowed_emails``
narrows who may enter: an address (``ana@example.org``) or a whole domain
(``@example.org``), compared without regard to case. With a provider anyone can have an
account at (Google, Microsoft personal accounts), that list is what keeps strangers out.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from typing import Any

import streamlit as st

from ui.markdown import escape_markdown


def auth_configured() -> bool:
    """True when the secrets files have an ``[auth]`` section: then everyone signs in."""
    return st.secrets.load_if_toml_exists() and "auth" in st.secrets


logger = logging.getLogger(__name__)

SHARED = (
    "Everyone who opens this Docent shares one set of conversations: it uses a team database "
    "(DOCENT_DATABASE_URL) and nobody signs in, so any visitor can open and continue any chat in the sidebar. "
    "To keep each person's conversations to themselves, switch sign-in on ([auth] in .streamlit/secrets.toml; "
    'README, "Serving a network").'
)
_said_at_start: list[bool] = []  # the server's log says it once per process


def shared_without_sign_in(team_database: bool) -> bool:
    """A team database without sign-in: every visitor is the same person to Docent."""
    return team_database and not auth_configured()


def say_shared(team_database: bool) -> bool:
    """When conversations are shared by everyone (``shared_without_sign_in``): said on the
    page, and once in the server's log when the app first runs; whether they are."""
    if not shared_without_sign_in(team_database):
        return False
    if not _said_at_start:
        _said_at_start.append(True)
        logger.warning(SHARED)
        print(f"Docent: {SHARED}", file=sys.stderr, flush=True)
    st.warning(SHARED, icon="👥")
    return True


def allowed_emails() -> list[str]:
    """``[docent] allowed_emails`` from the secrets, lower-cased; empty means anyone who signs in."""
    if not st.secrets.load_if_toml_exists():
        return []
    docent: Mapping[str, Any] = st.secrets.get("docent", {})
    entries = docent.get("allowed_emails", [])
    if isinstance(entries, str):
        entries = [entries]
    return [str(e).strip().lower() for e in entries if str(e).strip()]


def email_allowed(email: str | None, verified: object, allowed: list[str]) -> bool:
    """Whether a signed-in identity may enter: any, without a list; else a listed address or domain.

    An address the provider says it has not verified (``email_verified`` false) never
    matches: anyone can type any address into an account they open.
    """
    if not allowed:
        return True
    if not email or verified is False or str(verified).lower() == "false":
        return False
    email = email.strip().lower()
    domain = email[email.rfind("@") :]
    return email in allowed or domain in allowed


def may_enter() -> bool:
    """Whether this visitor sees Docent: always without ``[auth]``; else signed in and allowed."""
    if not auth_configured():
        return True
    if not st.user.is_logged_in:
        return False
    email = st.user.get("email")
    return email_allowed(str(email) if email else None, st.user.get("email_verified"), allowed_emails())


def current_person() -> str:
    """Whose conversations (and, per user, documents) this visitor works with: the signed-in
    address, lower-cased (the account's subject when the provider gives no address); '' for
    the one local person when nobody signs in."""
    if not auth_configured() or not st.user.is_logged_in:
        return ""
    who = st.user.get("email") or st.user.get("sub") or ""
    return str(who).strip().lower()


PROVIDER_KEYS = ("client_id", "client_secret", "server_metadata_url")


def _providers() -> list[str | None]:
    """``[auth.NAME]`` sections, one button each; ``None`` is the unnamed provider in ``[auth]``."""
    auth = st.secrets["auth"]
    named = [name for name, value in auth.items() if isinstance(value, Mapping) and "client_id" in value]
    return [*named, *([None] if "client_id" in auth else [])]


def auth_problem() -> str | None:
    """What is missing from ``[auth]`` for a sign-in to work, said so the operator can fix it."""
    auth = st.secrets["auth"]
    missing = [key for key in ("redirect_uri", "cookie_secret") if key not in auth]
    for provider in _providers() or [None]:
        section = auth[provider] if provider else auth
        missing += [f"{provider}.{key}" if provider else key for key in PROVIDER_KEYS if key not in section]
    if not missing:
        return None
    return (
        "Sign-in is switched on ([auth] in .streamlit/secrets.toml), but that section lacks "
        f'{", ".join(missing)}. See the README, "Serving a network".'
    )


def sign_in_page() -> None:
    """The only page a visitor sees before signing in (or when not on the list)."""
    st.title("📚 Docent")
    if st.user.is_logged_in:
        who = escape_markdown(str(st.user.get("email") or st.user.get("name") or "this account"))
        st.error(
            f"You are signed in as {who}, which may not use this Docent. "
            "Ask whoever runs it to add you to `allowed_emails`, or sign out and use another account."
        )
        st.button("Sign out", on_click=st.logout)
        return
    problem = auth_problem()
    if problem:
        st.error(problem)
        return
    st.write("Sign in to read and ask about the documents here.")
    for provider in _providers():
        label = f"Sign in with {provider.capitalize()}" if provider else "Sign in"
        st.button(label, key=f"sign_in_{provider or 'default'}", type="primary", on_click=st.login, args=(provider,))


def render_account() -> None:
    """Who is signed in, and a way out, at the foot of the sidebar (only with ``[auth]``)."""
    if not auth_configured():
        return
    with st.sidebar:
        st.divider()
        st.caption(f"Signed in as {escape_markdown(str(st.user.get('email') or st.user.get('name') or ''))}")
        st.button("Sign out", key="sign_out", on_click=st.logout)
