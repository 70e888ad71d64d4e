"""Two people chatting at once while a third uploads, against one real server."""

from __future__ import annotations

import re
import sqlite3
from urllib.parse import urlparse

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import LOOPBACK
from tests.browser.test_browser import (
    ORION_PDF,
    VEGA_PDF,
    answers,
    ask,
    drop_files,
    go,
    session_in_url,
    upload_and_wait,
)
from tests.pdfgen import make_pdf

pytestmark = [pytest.mark.browser, pytest.mark.timeout(900)]

BIG_PDF = make_pdf([f"Appendix page {i}\nMaintenance log entry {i}: the filter was cleaned." for i in range(1, 241)])


def settled(p) -> None:
    """Wait until the page's script run has finished (Streamlit's running indicator gone)."""
    expect(p.get_by_test_id("stStatusWidget")).to_have_count(0, timeout=120_000)


def test_two_chats_and_an_upload_at_once_keep_every_message_in_its_session(server, page, browser):
    outside: list[str] = []
    contexts = [browser.new_context(viewport={"width": 1280, "height": 900}) for _ in range(2)]
    b, c = (ctx.new_page() for ctx in contexts)
    for p in (b, c):
        p.set_default_timeout(30_000)
        p.on("request", lambda r: outside.append(r.url) if urlparse(r.url).hostname not in LOOPBACK | {None} else None)
    try:
        page.goto(server.url)
        upload_and_wait(page, [("orion.pdf", ORION_PDF, "application/pdf"), ("vega.pdf", VEGA_PDF, "application/pdf")])
        b.goto(server.url)
        c.goto(server.url)
        go(page, "Chat")
        go(b, "Chat")
        # A new tab opens the most recent conversation; the second person starts their own.
        b.get_by_test_id("stSidebar").get_by_role("button", name="➕ New chat", exact=True).click()
        expect(b).not_to_have_url(re.compile(session_in_url(page)), timeout=30_000)
        go(c, "Upload")

        # All three start before any finishes: the upload, then a question in each chat.
        settled(page)
        settled(b)
        drop_files(c, [("appendix.pdf", BIG_PDF, "application/pdf")])
        ask(page, "Where did the Orion project launch?")
        ask(b, "Where does the Vega telescope stand?")
        expect(answers(page).nth(0)).to_contain_text("Lisbon", timeout=120_000)
        expect(answers(b).nth(0)).to_contain_text("Atacama", timeout=120_000)
        settled(page)
        settled(b)
        ask(page, "What was its budget?")
        ask(b, "In which country is it?")
        expect(answers(page).nth(1)).to_contain_text("4 million euros", timeout=120_000)
        expect(answers(b).nth(1)).to_contain_text("Chile", timeout=120_000)
        expect(c.get_by_test_id("stMain")).to_contain_text("appendix.pdf: indexed", timeout=300_000)
        for p in (page, b, c):
            expect(p.get_by_test_id("stException")).to_have_count(0)

        sid_a, sid_b = session_in_url(page), session_in_url(b)
        assert sid_a != sid_b
        for p in (page, b):
            settled(p)  # each answer is stored when its run ends: read the file after that
        db = sqlite3.connect(server.data_dir / "docent.db")
        rows = db.execute("SELECT session_id, role, content FROM messages ORDER BY id").fetchall()
        asked = {sid: [t for s, r, t in rows if s == sid and r == "user"] for sid in (sid_a, sid_b)}
        assert asked[sid_a] == ["Where did the Orion project launch?", "What was its budget?"]
        assert asked[sid_b] == ["Where does the Vega telescope stand?", "In which country is it?"]
        per_session = {sid: sum(1 for s, _, _ in rows if s == sid) for sid in (sid_a, sid_b)}
        assert per_session == {sid_a: 4, sid_b: 4}  # no lost writes, nothing in the wrong session
        docs = {name for (name,) in db.execute("SELECT name FROM documents WHERE status = 'indexed'")}
        assert docs == {"orion.pdf", "vega.pdf", "appendix.pdf"}
    finally:
        for ctx in contexts:
            ctx.close()
    assert not outside, outside
