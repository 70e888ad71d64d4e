"""A team's Docent on real servers, in a real browser: PostgreSQL (Debian's binaries), a
``chroma run`` server, a model endpoint on loopback, and two app processes on two ports,
each with its own data folder (as on two machines), sharing the database, the vectors and
the stored files. Sign-in is on (the test OIDC provider), with one cookie secret for both processes.
Streamlit's sign-in cookie names the origin it was made for (port included), and cookies
ignore the port: a browser that moves from one process to the other here signs in again
(behind one reverse proxy both are one origin and one sign-in does).

What a team relies on: a conversation started in one process is there in the other; a
document uploaded through one is found by the other at once; two people never see each
other's conversations; ``kill -9`` of one process while it answers leaves the other serving
and every stored message kept; PostgreSQL or Chroma restarted under a running app is a
clear message, then works again without restarting the app.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import Server, _free_port, start_server, stop_server
from tests.browser.fake_llm import PADDING, FakeOpenAI, fake_openai
from tests.browser.helpers import new_chat, settled
from tests.browser.oidc import CLIENT_ID, CLIENT_SECRET, FakeOIDCProvider
from tests.browser.test_browser import ORION_PDF, answers, ask, go, session_in_url, upload_and_wait
from tests.pgserver import PgServer

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(1500)]

ANA = {"sub": "ana", "email": "ana@team.example.org", "email_verified": True, "name": "Ana"}
BEN = {"sub": "ben", "email": "ben@team.example.org", "email_verified": True, "name": "Ben"}
CHROMA = Path(sys.executable).with_name("chroma")


@dataclass
class Chroma:
    folder: Path
    port: int
    process: subprocess.Popen | None = None

    def start(self) -> None:
        log = open(self.folder / "chroma.log", "ab")  # noqa: SIM115 - the server's for its life
        self.process = subprocess.Popen(
            [str(CHROMA), "run", "--path", str(self.folder / "db"), "--host", "127.0.0.1", "--port", str(self.port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/api/v2/heartbeat", timeout=2)
                return
            time.sleep(0.5)
        raise RuntimeError(f"chroma run did not start: {(self.folder / 'chroma.log').read_text()[-2000:]}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(30)


@dataclass
class Team:
    a: Server
    b: Server
    pg: PgServer
    url: str  # the database's
    chroma: Chroma
    provider: FakeOIDCProvider
    env: dict[str, str]


def stored_messages(url: str, session_id: str) -> list[tuple[str, str]]:
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT role, content FROM messages WHERE session_id = %s ORDER BY id", (session_id,))
        return [(r[0], r[1]) for r in rows.fetchall()]


def with_orion(team: Team, page: Page) -> None:
    """The library holds orion.pdf: uploaded through ``page`` unless an earlier test of the
    module did it (each test also runs alone, or on another xdist worker)."""
    import psycopg

    with psycopg.connect(team.url) as conn:
        row = conn.execute("SELECT 1 FROM documents WHERE name = 'orion.pdf' AND status = 'indexed'").fetchone()
    if row is None:
        upload_and_wait(page, [("orion.pdf", ORION_PDF, "application/pdf")])


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory, postgres_server: PgServer) -> Iterator[Team]:
    if not CHROMA.exists():
        pytest.skip(f"chroma's server command is not installed ({CHROMA})")
    workdir = tmp_path_factory.mktemp("docent-team")
    url = postgres_server.create_database(f"team_{secrets.token_hex(4)}")
    chroma = Chroma(workdir, _free_port())
    chroma.start()
    provider = FakeOIDCProvider().start()
    secrets_file = workdir / "secrets.toml"
    secrets_file.write_text(
        "[auth]\n"
        'redirect_uri = "http://127.0.0.1:{port}/oauth2callback"\n'
        f'cookie_secret = "{secrets.token_urlsafe(32)}"\n'
        f'client_id = "{CLIENT_ID}"\n'
        f'client_secret = "{CLIENT_SECRET}"\n'
        f'server_metadata_url = "{provider.discovery_url}"\n'
    )
    with fake_openai() as llm:
        env = {
            "DOCENT_DATABASE_URL": url,
            "DOCENT_CHROMA_HOST": "127.0.0.1",
            "DOCENT_CHROMA_PORT": str(chroma.port),
            "DOCENT_FILES_DIR": str(workdir / "shared-files"),
            "DOCENT_LLM_PROVIDER": "openai",
            "DOCENT_OPENAI_BASE_URL": llm,
            "DOCENT_EMBED_PROVIDER": "hash",
            "STREAMLIT_SECRETS_FILES": str(secrets_file),
        }
        (workdir / "a").mkdir()
        (workdir / "b").mkdir()
        a = start_server(workdir / "a", env)
        b = start_server(workdir / "b", env)
        try:
            yield Team(a, b, postgres_server, url, chroma, provider, env)
        finally:
            stop_server(a)
            stop_server(b)
            provider.stop()
            chroma.stop()


def signed_in(browser: Browser, team: Team, server: Server, user: dict[str, object]) -> Page:
    """A new browser (its own cookies) signed in as ``user`` on ``server``."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(60_000)
    sign_in_again(page, team, server, user)
    return page


def sign_in_again(page: Page, team: Team, server: Server, user: dict[str, object]) -> None:
    """Sign in on ``server``, unless the browser's cookie already does (it is one cookie for both
    ports, and it holds for the origin that made it last)."""
    team.provider.user = user
    page.goto(server.url)
    signed = page.get_by_text(f"Signed in as {user['email']}")
    button = page.get_by_role("button", name="Sign in")
    expect(signed.or_(button)).to_be_visible(timeout=180_000)  # a first page waits for the start-up imports
    if not signed.is_visible():
        button.click()
    expect(signed).to_be_visible()


def test_two_processes_share_sessions_and_documents_and_people_stay_apart(team: Team, browser: Browser) -> None:
    ana = signed_in(browser, team, team.a, ANA)
    upload_and_wait(ana, [("orion.pdf", ORION_PDF, "application/pdf")])  # through process A
    go(ana, "Chat")
    ask(ana, "Where did the Orion project launch?")
    expect(answers(ana).last).to_contain_text("Answered in", timeout=120_000)  # written and stored whole
    expect(answers(ana).last).to_contain_text("Lisbon")
    settled(ana)
    sid = session_in_url(ana)

    # The same person through process B.
    sign_in_again(ana, team, team.b, ANA)
    ana.goto(f"{team.b.url}/?session={sid}")
    expect(answers(ana).first).to_contain_text("Lisbon")  # the conversation made in A
    ask(ana, "Where did the Orion project launch, again?")  # found through B at once: the upload went through A
    expect(answers(ana).nth(1)).to_contain_text("Answered in", timeout=120_000)
    expect(answers(ana).nth(1)).to_contain_text("Lisbon")
    expect(answers(ana).nth(1).get_by_role("button", name=re.compile("orion.pdf · page 1"))).to_be_visible()
    settled(ana)
    assert [role for role, _ in stored_messages(team.url, sid)] == ["user", "assistant"] * 2

    ben = signed_in(browser, team, team.b, BEN)
    sidebar = ben.get_by_test_id("stSidebar")
    expect(sidebar).to_contain_text("Conversations")
    expect(sidebar).not_to_contain_text("Where did the Orion")
    ben.goto(f"{team.b.url}/?session={sid}")  # Ana's conversation, by its id
    expect(ben.get_by_text(f"Conversation '{sid}' was not found")).to_be_visible()
    settled(ben)
    assert "Lisbon" not in ben.locator("body").inner_text()
    assert session_in_url(ben) != sid
    ben.context.close()
    ana.context.close()


def test_postgres_and_chroma_restarted_under_a_running_app(team: Team, browser: Browser) -> None:
    ana = signed_in(browser, team, team.b, ANA)
    with_orion(team, ana)
    go(ana, "Chat")
    new_chat(ana)
    team.pg.stop()
    try:
        ana.reload()  # the next action with the server away (a page may also redraw on its own)
        expect(ana.get_by_text("cannot be reached").first).to_be_visible(timeout=60_000)
        expect(ana.get_by_text("Trying the database server again")).to_be_visible()
        assert "Traceback" not in ana.locator("body").inner_text()
    finally:
        team.pg.start()
    # Back by itself, without a reload: the page tries the server every few seconds.
    expect(ana.get_by_text("cannot be reached")).to_have_count(0, timeout=60_000)
    expect(ana.get_by_test_id("stChatInputTextArea")).to_be_enabled(timeout=30_000)
    new_chat(ana)
    ask(ana, "Where did the Orion project launch?")
    expect(answers(ana).last).to_contain_text("Lisbon", timeout=120_000)
    settled(ana)

    team.chroma.stop()
    try:
        ask(ana, "Where did the Orion project launch this time?")
        expect(ana.get_by_test_id("stAlert").first).to_be_visible(timeout=60_000)
        assert "Traceback" not in ana.locator("body").inner_text()
    finally:
        team.chroma.start()
    ana.reload()
    new_chat(ana)
    ask(ana, "Where did the Orion project launch?")
    expect(answers(ana).last).to_contain_text("Lisbon", timeout=120_000)
    ana.context.close()


def test_kill_9_of_one_process_while_it_answers(team: Team, browser: Browser) -> None:
    FakeOpenAI.delay, FakeOpenAI.padding = 0.5, 8  # long enough to be killed half-way
    try:
        ana = signed_in(browser, team, team.a, ANA)  # on A's default page, Chat
        with_orion(team, ana)
        go(ana, "Chat")
        expect(ana.get_by_test_id("stChatInputTextArea")).to_be_visible()
        new_chat(ana)
        ask(ana, "Where did the Orion project launch?")
        expect(answers(ana).last).to_contain_text(PADDING, timeout=120_000)  # it is streaming
        sid = session_in_url(ana)
        before = stored_messages(team.url, sid)
        os.kill(team.a.process.pid, signal.SIGKILL)
        team.a.process.wait(30)
    finally:
        FakeOpenAI.delay, FakeOpenAI.padding = 0.0, 1
    assert before[0] == ("user", "Where did the Orion project launch?")  # stored before the answer began
    sign_in_again(ana, team, team.b, ANA)  # B is another origin here (one, behind a proxy)
    ana.goto(f"{team.b.url}/?session={sid}")  # the other process serves on
    expect(ana.get_by_test_id("stChatMessage").first).to_contain_text("Where did the Orion project launch?")
    after = stored_messages(team.url, sid)
    assert after[: len(before)] == before  # nothing stored was lost
    ask(ana, "Where did the Orion project launch?")
    expect(answers(ana).last).to_contain_text("Lisbon", timeout=120_000)
    ana.context.close()
