"""Two people chatting at once while a third uploads, against one real server."""

from __future__ import annotations

import json
import re
import sqlite3
from urllib.parse import urlparse

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import LOOPBACK, stop_server
from tests.browser.fake_llm import PADDING, FakeOpenAI, fake_openai
from tests.browser.helpers import new_chat, start_seeded_server
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
        for p in (page, b):  # an answer's controls are drawn from the session: it is stored
            expect(answers(p).nth(1).get_by_role("button", name="Copy")).to_be_visible(timeout=120_000)
        db = sqlite3.connect(server.data_dir / "docent.db")
        rows = db.execute("SELECT session_id, role, content FROM messages ORDER BY id").fetchall()
        asked = {sid: [t for s, r, t in rows if s == sid and r == "user"] for sid in (sid_a, sid_b)}
        assert asked[sid_a] == ["Where did the Orion project launch?", "What was its budget?"]
        assert asked[sid_b] == ["Where does the Vega telescope stand?", "In which country is it?"]
        roles = {sid: [r for s, r, _ in rows if s == sid] for sid in (sid_a, sid_b)}
        assert roles == {sid: ["user", "assistant"] * 2 for sid in (sid_a, sid_b)}  # nothing lost, nor misplaced
        docs = {name for (name,) in db.execute("SELECT name FROM documents WHERE status = 'indexed'")}
        assert docs == {"orion.pdf", "vega.pdf", "appendix.pdf"}
    finally:
        for ctx in contexts:
            ctx.close()
    assert not outside, outside


def test_two_tabs_on_one_chat_answer_one_question_at_a_time(tmp_path, page, browser):
    """The same ``?session=`` open in two tabs, a question asked in each while the first is
    being answered. Before: stored question, question, answer, answer, and the second answer
    read the first question, unanswered, as its history. Now the second tab says what it
    waits for, asks once the first answer is stored (with it as history); a third tab opened
    meanwhile says the question is being answered and draws each answer once it is stored."""
    others = [browser.new_context(viewport={"width": 1280, "height": 900}) for _ in range(2)]
    b, c = (ctx.new_page() for ctx in others)
    with fake_openai(delay=0.3) as url:
        FakeOpenAI.padding = 8  # each answer streams for about 20 s once its substance is out
        env = {"DOCENT_LLM_PROVIDER": "openai", "DOCENT_OPENAI_BASE_URL": url, "DOCENT_EMBED_PROVIDER": "hash"}
        srv = start_seeded_server(tmp_path, env, [("orion.pdf", ORION_PDF)])
        try:
            page.goto(srv.url)
            go(page, "Chat")
            sid = new_chat(page)
            b.goto(f"{srv.url}/?session={sid}")
            expect(b.get_by_test_id("stChatInputTextArea")).to_be_enabled(timeout=60_000)
            assert session_in_url(b) == sid

            ask(page, "Where did the Orion project launch?")
            expect(answers(page).last).to_contain_text(PADDING, timeout=120_000)  # being written
            ask(b, "What was its budget?")
            waiting = answers(b).last
            expect(waiting).to_contain_text("This conversation is answering another question first", timeout=60_000)
            expect(waiting).to_contain_text("Where did the Orion project launch?")
            assert [r for r, _ in stored(srv, sid)] == ["user"]  # the second question waits, unstored
            c.goto(f"{srv.url}/?session={sid}")
            expect(c.get_by_text(re.compile(r"^Being answered: “"))).to_be_visible(timeout=60_000)

            for p in (page, b):
                expect(answers(p).last.get_by_role("button", name="Copy")).to_be_visible(timeout=180_000)
            expect(answers(b)).to_have_count(2)  # the first tab's answer, then its own
            rows = stored(srv, sid)
            assert [r for r, _ in rows] == ["user", "assistant", "user", "assistant"]
            assert [t for r, t in rows if r == "user"] == [
                "Where did the Orion project launch?",
                "What was its budget?",
            ]
            assert "4 million euros" in rows[3][1]  # the follow-up was read with the first answer
            second = [r for r in FakeOpenAI.requests if r.get("stream")][-1]  # the second answer's call
            assert "Lisbon" in json.dumps(second["messages"])  # it read the first answer as history

            expect(answers(c)).to_have_count(2, timeout=60_000)  # the third tab drew both, unasked
            page.reload()  # the first tab, after a rerun: the same conversation
            expect(answers(page)).to_have_count(2)
            for p in (page, c):
                expect(answers(p).last).to_contain_text("4 million euros")
        finally:
            stop_server(srv)
            for ctx in others:
                ctx.close()


def stored(srv, sid: str) -> list[tuple[str, str]]:
    with sqlite3.connect(srv.data_dir / "docent.db") as db:
        return db.execute("SELECT role, content FROM messages WHERE session_id = ? ORDER BY id", (sid,)).fetchall()
