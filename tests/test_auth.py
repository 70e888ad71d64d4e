"""ui/auth.py through AppTest: who gets past app.py once ``[auth]`` is in the secrets.

AppTest sets the secrets and ``st.user`` of a run directly; the real sign-in through an
OpenID Connect provider, and what a browser shows before it, are in tests/browser/test_auth.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from ui.auth import email_allowed

REPO = Path(__file__).resolve().parents[1]
AUTH = {
    "redirect_uri": "http://127.0.0.1:8501/oauth2callback",
    "cookie_secret": "a-long-enough-random-cookie-secret",
    "client_id": "docent",
    "client_secret": "not-a-real-secret",
    "server_metadata_url": "http://127.0.0.1:9/.well-known/openid-configuration",
}
LISTED = ["ana@example.org", "@team.example.org"]


@pytest.fixture(autouse=True)
def _fast_providers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCENT_LLM_PROVIDER", "extractive")
    monkeypatch.setenv("DOCENT_EMBED_PROVIDER", "hash")
    monkeypatch.chdir(REPO)


def run_app(
    user: dict[str, object], allowed: list[str] | None = None, *, auth: Mapping[str, object] | None = AUTH
) -> AppTest:
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    if auth is not None:
        at.secrets["auth"] = auth
    if allowed is not None:
        at.secrets["docent"] = {"allowed_emails": allowed}
    at.user = user
    at.run()
    assert not at.exception, at.exception
    return at


def shows_docent(at: AppTest) -> bool:
    return any(b.label == "➕ New chat" for b in at.sidebar.button)


def test_without_auth_everyone_on_this_machine_sees_docent() -> None:
    at = run_app({}, auth=None)
    assert shows_docent(at)
    assert [b.label for b in at.button if b.label.startswith("Sign")] == []


def test_with_auth_an_anonymous_visitor_gets_only_the_sign_in_button() -> None:
    at = run_app({"is_logged_in": False}, LISTED)
    assert not shows_docent(at)
    assert [b.label for b in at.button] == ["Sign in"]
    assert len(at.sidebar.button) == 0


def test_named_providers_get_a_button_each() -> None:
    provider = {k: AUTH[k] for k in ("client_id", "client_secret", "server_metadata_url")}
    auth = {"redirect_uri": AUTH["redirect_uri"], "cookie_secret": "x" * 32, "google": provider, "okta": provider}
    at = run_app({"is_logged_in": False}, auth=auth)
    assert [b.label for b in at.button] == ["Sign in with Google", "Sign in with Okta"]


def test_an_incomplete_auth_section_says_what_is_missing_and_lets_no_one_in() -> None:
    at = run_app({"is_logged_in": False}, auth={"client_id": "docent", "redirect_uri": AUTH["redirect_uri"]})
    assert not shows_docent(at)
    assert len(at.button) == 0
    assert "that section lacks cookie_secret, client_secret, server_metadata_url." in at.error[0].value


def test_with_auth_a_listed_user_sees_docent_and_who_is_signed_in() -> None:
    at = run_app({"is_logged_in": True, "email": "Bo@Team.Example.org", "email_verified": True}, LISTED)
    assert shows_docent(at)
    assert any("Bo@Team.Example.org" in c.value for c in at.sidebar.caption)
    assert any(b.label == "Sign out" for b in at.sidebar.button)


def test_with_auth_a_user_off_the_list_is_turned_away() -> None:
    at = run_app({"is_logged_in": True, "email": "eve@example.net", "email_verified": True}, LISTED)
    assert not shows_docent(at)
    assert "`eve@example.net`, which may not use this Docent" in at.error[0].value  # shown whole, never a mailto link
    assert [b.label for b in at.button] == ["Sign out"]


def test_with_auth_and_no_list_anyone_signed_in_enters() -> None:
    at = run_app({"is_logged_in": True, "email": "eve@example.net"})
    assert shows_docent(at)


@pytest.mark.parametrize(
    ("email", "verified", "allowed"),
    [
        ("ana@example.org", True, True),
        ("ANA@Example.ORG", None, True),  # case does not matter; no claim is not a "no"
        ("bo@team.example.org", True, True),  # the whole domain is listed
        ("bo@evil-team.example.org", True, False),
        ("bo@team.example.org.evil.net", True, False),
        ("ana@example.org", False, False),  # the provider says it never checked the address
        ("ana@example.org", "false", False),
        (None, True, False),
        ("", True, False),
    ],
)
def test_the_list_matches_addresses_and_domains_exactly(email: str | None, verified: object, allowed: bool) -> None:
    assert email_allowed(email, verified, LISTED) is allowed


def test_an_empty_list_lets_anyone_who_signed_in() -> None:
    assert email_allowed("anyone@anywhere.net", None, [])
