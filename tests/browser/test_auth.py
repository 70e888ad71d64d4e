"""Sign-in in a real browser: with ``[auth]`` in the secrets, nothing shows before it.

The server runs with a secrets file that points Streamlit's ``st.login`` at a small OpenID
Connect provider on 127.0.0.1 (tests/browser/oidc.py), and with a data folder that already
holds a document and a named conversation: an anonymous visitor must see neither, on any
URL; a listed user signs in through the provider and sees Docent; an unlisted one does not.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import REPO, Server, start_server, stop_server
from tests.browser.oidc import CLIENT_ID, CLIENT_SECRET, FakeOIDCProvider
from tests.pdfgen import ZEPHYR_PAGES, make_pdf

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

DOCUMENT = "zephyr.pdf"
CONVERSATION = "Quarterly secrets"
PROVIDERS = {"DOCENT_LLM_PROVIDER": "extractive", "DOCENT_EMBED_PROVIDER": "hash"}
ANA = {"sub": "ana", "email": "Ana@Example.org", "email_verified": True, "name": "Ana"}
MALLORY = {"sub": "mallory", "email": "mallory@elsewhere.net", "email_verified": True, "name": "Mallory"}


def cli(data_dir: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCENT_")}
    env.update(PROVIDERS, DOCENT_DATA_DIR=str(data_dir))
    done = subprocess.run(
        [sys.executable, "-m", "rag_core", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@dataclass
class Site:
    server: Server
    conversation_id: str  # the id of CONVERSATION, for deep links

    @property
    def url(self) -> str:
        return self.server.url


@pytest.fixture(scope="module")
def provider():
    oidc = FakeOIDCProvider().start()
    yield oidc
    oidc.stop()


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory, provider: FakeOIDCProvider):
    """A server with sign-in on, over a data folder holding a document and a conversation."""
    workdir = tmp_path_factory.mktemp("docent-auth")
    make_pdf(ZEPHYR_PAGES, workdir / DOCUMENT)
    cli(workdir / "data", "ingest", str(workdir / DOCUMENT))
    answer = json.loads(cli(workdir / "data", "ask", "--json", "--session", CONVERSATION, "How much water?"))
    secrets_file = workdir / "secrets.toml"
    secrets_file.write_text(
        "[auth]\n"
        'redirect_uri = "http://127.0.0.1:{port}/oauth2callback"\n'
        f'cookie_secret = "{secrets.token_urlsafe(32)}"\n'
        f'client_id = "{CLIENT_ID}"\n'
        f'client_secret = "{CLIENT_SECRET}"\n'
        f'server_metadata_url = "{provider.discovery_url}"\n'
        "\n[docent]\n"
        'allowed_emails = ["ana@example.org", "@team.example.org"]\n'
    )
    server = start_server(workdir, {**PROVIDERS, "STREAMLIT_SECRETS_FILES": str(secrets_file)})
    yield Site(server, answer["session_id"])
    stop_server(server)


def sign_in_as(page: Page, site: Site, provider: FakeOIDCProvider, user: dict[str, object]) -> None:
    provider.user = user
    page.goto(site.url)
    page.get_by_role("button", name="Sign in").click()


def assert_shows_nothing_of_docent(page: Page) -> None:
    expect(page.get_by_test_id("stSidebar")).to_have_count(0)
    text = page.locator("body").inner_text()
    for secret in (DOCUMENT, CONVERSATION, "Conversations", "Upload", "Settings", "zephyr", "litres"):
        assert secret not in text, f"{secret!r} is visible before sign-in:\n{text}"


def test_an_anonymous_visitor_sees_only_the_sign_in_on_every_url(signed: Site, page: Page) -> None:
    for path in ("/", "/upload", "/settings", "/evaluate", f"/chat?session={signed.conversation_id}"):
        page.goto(signed.url + path)
        expect(page.get_by_role("button", name="Sign in")).to_be_visible()
        expect(page.get_by_text("Sign in to read and ask about the documents here.")).to_be_visible()
        assert_shows_nothing_of_docent(page)


def test_a_listed_user_signs_in_sees_docent_and_signs_out(signed: Site, provider: FakeOIDCProvider, page: Page) -> None:
    sign_in_as(page, signed, provider, ANA)
    expect(page.get_by_text("Signed in as Ana@Example.org")).to_be_visible()
    expect(page.get_by_test_id("stSidebar")).to_contain_text("Conversations")
    # The conversation the command line made is the local person's, not Ana's: each person sees their own.
    expect(page.get_by_role("button", name=CONVERSATION)).to_have_count(0)
    assert {"/authorize", "/token"} <= set(provider.requests)
    page.get_by_role("link", name="Upload").click()
    expect(page.get_by_role("heading", name="Indexed documents (1)")).to_be_visible()

    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()
    assert_shows_nothing_of_docent(page)


def test_a_user_not_on_the_list_is_turned_away(signed: Site, provider: FakeOIDCProvider, page: Page) -> None:
    sign_in_as(page, signed, provider, MALLORY)
    expect(
        page.get_by_text("You are signed in as mallory@elsewhere.net, which may not use this Docent")
    ).to_be_visible()
    assert_shows_nothing_of_docent(page)
    page.goto(f"{signed.url}/chat?session={signed.conversation_id}")
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    assert_shows_nothing_of_docent(page)
