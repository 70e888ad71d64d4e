"""A tab reloaded while its question waits behind another tab's answer (issue 42, item 7):
the question is not dropped. After the reload it is on the page, kept, with "Ask it" once the
other answer is stored; asked, it is answered once, after the other answer."""

from __future__ import annotations

import sqlite3

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import stop_server
from tests.browser.fake_llm import PADDING, FakeOpenAI, fake_openai
from tests.browser.helpers import new_chat, settled, start_seeded_server
from tests.browser.test_browser import ORION_PDF, answers, ask, go

pytestmark = [pytest.mark.browser, pytest.mark.timeout(900)]
FIRST, SECOND = "Where did the Orion project launch?", "What was its budget?"


def stored(srv, sid: str) -> list[tuple[str, str]]:
    with sqlite3.connect(srv.data_dir / "docent.db") as db:
        return db.execute("SELECT role, content FROM messages WHERE session_id = ? ORDER BY id", (sid,)).fetchall()


def test_a_tab_reloaded_while_its_question_waits_keeps_the_question(tmp_path, page, browser):
    other = browser.new_context(viewport={"width": 1280, "height": 900})
    b = other.new_page()
    with fake_openai(delay=0.3) as url:
        FakeOpenAI.padding = 8  # the first answer streams for about 20 s once its substance is out
        env = {"DOCENT_LLM_PROVIDER": "openai", "DOCENT_OPENAI_BASE_URL": url, "DOCENT_EMBED_PROVIDER": "hash"}
        srv = start_seeded_server(tmp_path, env, [("orion.pdf", ORION_PDF)])
        try:
            page.goto(srv.url)
            go(page, "Chat")
            sid = new_chat(page)
            b.goto(f"{srv.url}/?session={sid}")
            expect(b.get_by_test_id("stChatInputTextArea")).to_be_enabled(timeout=60_000)

            ask(page, FIRST)
            expect(answers(page).last).to_contain_text(PADDING, timeout=120_000)  # being written
            ask(b, SECOND)
            expect(answers(b).last).to_contain_text("answering another question first", timeout=60_000)
            b.reload()  # while its question waits
            expect(b.get_by_test_id("stChatMessage").filter(has_text=SECOND)).to_be_visible(timeout=60_000)

            expect(answers(page).first.get_by_role("button", name="Copy")).to_be_visible(timeout=180_000)
            ask_it = b.get_by_role("button", name="Ask it")
            expect(ask_it).to_be_enabled(timeout=60_000)  # the page ran again once the first answer was stored
            ask_it.click()
            expect(answers(b).last).to_contain_text("4 million euros", timeout=180_000)
            settled(b)
            expect(answers(b).last.get_by_role("button", name="Copy")).to_be_visible(timeout=180_000)
            rows = stored(srv, sid)
            assert [r for r, _ in rows] == ["user", "assistant", "user", "assistant"]
            assert [t for r, t in rows if r == "user"] == [FIRST, SECOND]  # asked once, after the first answer
            expect(b.get_by_role("button", name="Ask it")).to_have_count(0)
        finally:
            stop_server(srv)
            other.close()
