"""An answer's controls in a real browser: Stop while it streams, Regenerate, Copy, the
edited search of a follow-up, the timing line, and the citation markers that open the
source viewer in a new tab.

The server answers with the ``openai`` provider against the fake OpenAI-compatible endpoint
of ``fake_llm`` on 127.0.0.1 (an answer citing ``[1]``, streamed word by word, as slowly as
a test asks); embeddings are hashed. Nothing leaves the machine (the ``page`` fixture).
"""

from __future__ import annotations

import json
import re
import sqlite3

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import stop_server
from tests.browser.fake_llm import PADDING, FakeOpenAI, fake_openai
from tests.browser.helpers import new_chat, settled, start_seeded_server
from tests.browser.test_browser import ORION_PDF, VEGA_PDF, answers, ask, go, screenshot, session_in_url

pytestmark = [pytest.mark.browser, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def cited(tmp_path_factory: pytest.TempPathFactory):
    """A Docent server answering through the fake endpoint, with orion.pdf and vega.pdf indexed."""
    with fake_openai() as url:
        workdir = tmp_path_factory.mktemp("docent-cited")
        env = {"DOCENT_LLM_PROVIDER": "openai", "DOCENT_OPENAI_BASE_URL": url, "DOCENT_EMBED_PROVIDER": "hash"}
        srv = start_seeded_server(workdir, env, [("orion.pdf", ORION_PDF), ("vega.pdf", VEGA_PDF)])
        try:
            yield srv
        finally:
            stop_server(srv)


def stored(server, session_id: str) -> list[dict]:
    """The session's messages as the server stored them (role, content, meta)."""
    with sqlite3.connect(server.data_dir / "docent.db") as db:
        rows = db.execute(
            "SELECT role, content, condensed_question, meta FROM messages WHERE session_id = ? ORDER BY id",
            (session_id,),
        ).fetchall()
    return [{"role": r, "content": c, "condensed": q, "meta": json.loads(m or "{}")} for r, c, q, m in rows]


def test_stop_keeps_the_partial_answer_marked_as_stopped(cited, page: Page) -> None:
    FakeOpenAI.delay, FakeOpenAI.padding = 0.3, 6  # the first padding at once, the other 5 in about 14 s
    try:
        page.goto(cited.url)
        go(page, "Chat")
        new_chat(page)
        ask(page, "Where did the Orion project launch?")
        answer = answers(page).last
        stop = answer.get_by_role("button", name="Stop")
        expect(stop).to_be_visible()
        expect(answer).to_contain_text(PADDING)  # the answer is being written (the preview came first)
        stop.click()
        expect(answer).to_contain_text("Stopped", timeout=30_000)
        shown = answer.get_by_test_id("stMarkdown").first.inner_text()
        assert "Lisbon" in shown and "▌" not in shown
        expect(answer.get_by_role("button", name="Stop")).to_have_count(0)
        [question, partial] = stored(cited, session_in_url(page))
        assert question["content"] == "Where did the Orion project launch?"
        assert partial["meta"].get("stopped") is True
        assert "Lisbon" in partial["content"] and 1 <= partial["content"].count(PADDING) < 6  # not the whole
        screenshot(page, "stopped")

        FakeOpenAI.delay = 0.0
        answer.get_by_role("button", name="Regenerate").click()  # the stopped answer, written again in full
        expect(answers(page).last).not_to_contain_text("Stopped", timeout=60_000)
        expect(answers(page).last).to_contain_text("Answered in", timeout=60_000)
        settled(page)
        expect(answers(page)).to_have_count(1)
        [_, again] = stored(cited, session_in_url(page))
        assert again["content"].count(PADDING) == 6 and not again["meta"].get("stopped")
    finally:
        FakeOpenAI.delay, FakeOpenAI.padding = 0.0, 1


def test_timing_line_copy_and_a_citation_opening_the_viewer(cited, page: Page) -> None:
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=cited.url)
    page.goto(cited.url)
    go(page, "Chat")
    new_chat(page)
    ask(page, "Where did the Orion project launch?")
    answer = answers(page).last
    expect(answer).to_contain_text("Answered in", timeout=60_000)
    timing = answer.get_by_text(re.compile(r"Answered in [\d.]+ s"))
    expect(timing).to_contain_text(re.compile(r"retrieval \d+ ms"))
    expect(timing).to_contain_text(re.compile(r"first token [\d.]+ m?s"))
    expect(timing).to_contain_text("by openai-compatible (gpt-4o-mini)")

    answer.get_by_role("button", name="Copy").click()
    code = page.get_by_test_id("stPopoverBody").get_by_test_id("stCode")
    expect(code).to_contain_text("[1] orion.pdf, page 1:")
    code.hover()
    code.get_by_role("button").first.click()
    copied = page.evaluate("navigator.clipboard.readText()")
    assert re.match(r"The Orion project launched in 2019 in Lisbon \[\d\]\.", copied)
    assert "Sources:\n\n[1] orion.pdf, page " in copied
    page.keyboard.press("Escape")

    with page.context.expect_page() as opened:  # a citation marker opens its passage in a new tab
        answer.get_by_test_id("stMarkdown").first.get_by_role("link").first.click()
    tab = opened.value
    dialog = tab.get_by_role("dialog")
    expect(dialog).to_contain_text("orion.pdf", timeout=60_000)
    expect(dialog).to_contain_text("launched in 2019 in Lisbon")
    image = dialog.get_by_test_id("stImage").locator("img")
    expect(image).to_be_visible()
    assert tab.evaluate("(img) => img.naturalWidth", image.element_handle()) > 300
    assert "source=" not in tab.url  # opened once
    tab.close()


def test_the_search_of_a_follow_up_can_be_corrected(cited, page: Page) -> None:
    page.goto(cited.url)
    go(page, "Chat")
    new_chat(page)
    ask(page, "Where did the Orion project launch?")
    expect(answers(page).last).to_contain_text("Answered in", timeout=60_000)
    settled(page)
    ask(page, "And the telescope?")
    follow_up = answers(page).nth(1)
    expect(follow_up).to_contain_text("Answered in", timeout=60_000)
    searched = follow_up.get_by_text("Searched for:")
    assert "Vega" not in searched.inner_text()  # not what this test will correct it to

    follow_up.get_by_role("button", name="Edit the search").click()
    box = page.get_by_test_id("stPopoverBody").get_by_role("textbox")
    box.fill("Where does the Vega telescope stand?")
    screenshot(page, "rewrite")
    page.get_by_role("button", name="Search and answer again").click()
    follow_up = answers(page).nth(1)
    expect(follow_up).to_contain_text("Searched for: Where does the Vega telescope stand? (edited)", timeout=60_000)
    expect(follow_up).to_contain_text("Atacama")
    expect(answers(page)).to_have_count(2)
    messages = stored(cited, session_in_url(page))
    assert [m["role"] for m in messages] == ["user", "assistant"] * 2  # the question not stored twice
    assert messages[-1]["condensed"] == "Where does the Vega telescope stand?"
    assert messages[-1]["meta"].get("rewrite_edited") is True

    page.reload()  # the session keeps the edit
    expect(answers(page).nth(1)).to_contain_text("Where does the Vega telescope stand? (edited)")
    screenshot(page, "answer")
