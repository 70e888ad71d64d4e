"""A 10,000-message chat among 5,000 chats, in a real browser (issue 42, item 4): it draws its
latest messages (the tab once grew to 2.3 GB and never finished), the sidebar its latest
chats, a question typed is stored and answered, and earlier messages come on request.

How fast it opens is a figure of ``python -m rag_core.bench.long_chats``, not asserted here.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from rag_core import Message, build_context, load_settings
from tests.browser.conftest import stop_server
from tests.browser.helpers import settled, start_seeded_server
from tests.browser.test_browser import ORION_PDF, answers, ask

pytestmark = [pytest.mark.browser, pytest.mark.timeout(900)]
ENV = {"DOCENT_LLM_PROVIDER": "extractive", "DOCENT_EMBED_PROVIDER": "hash"}


def test_a_ten_thousand_message_chat_among_five_thousand_opens_and_takes_a_question(tmp_path: Path, page: Page) -> None:
    ctx = build_context(load_settings({"DOCENT_DATA_DIR": str(tmp_path / "data"), **ENV}))
    now = time.time()
    with ctx.db.connect() as c:
        for i in range(4999):
            c.execute(
                "INSERT INTO sessions (id, name, created, updated, doc_filter, owner) VALUES (?, ?, ?, ?, NULL, '')",
                (f"chat{i:05d}", f"Chat number {i}", now - 10 - i, now - 10 - i),
            )
    turns: list[Message] = []
    for i in range(5000):
        turns += [Message("user", f"Question number {i}?"), Message("assistant", f"Answer number {i}.")]
    chat = ctx.sessions.add_whole("A long chat", turns)
    server = start_seeded_server(tmp_path, ENV, [("orion.pdf", ORION_PDF)])
    try:
        page.goto(f"{server.url}/?session={chat.id}")
        expect(page.get_by_text("Answer number 4999.")).to_be_visible(timeout=60_000)
        settled(page)
        messages = page.get_by_test_id("stChatMessage")
        assert messages.count() == 30
        sidebar = page.get_by_test_id("stSidebar")
        expect(sidebar.get_by_text("The latest 30 of 5,000 chats: search for the others.")).to_be_visible()

        ask(page, "Where did the Orion project launch?")
        expect(answers(page).last).to_contain_text("Lisbon", timeout=120_000)
        settled(page)
        last = ctx.sessions.recent(chat.id, 2)
        assert last[0].content == "Where did the Orion project launch?" and "Lisbon" in last[1].content

        page.get_by_role("button", name="Show earlier messages").click()
        expect(page.get_by_text("Question number 4971?")).to_be_visible()
        settled(page)
        assert messages.count() <= 64
    finally:
        stop_server(server)
