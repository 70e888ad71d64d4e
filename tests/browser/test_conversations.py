"""Conversations in a real browser: suggested questions and follow-ups, the summary of
older turns in a long conversation, the documents in scope, the chat list (by day, search,
no pile of empty "New chat"), and the page in the user's light or dark theme.

Extractive answers and hashed embeddings; a small memory, so that a few turns already
need a summary. Documents indexed before the server starts.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import start_server, stop_server
from tests.browser.helpers import new_chat, settled, start_seeded_server
from tests.browser.test_browser import ORION_PDF, VEGA_PDF, answers, ask, go, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.timeout(900)]

GUIDE = (
    b"# Pump guide\n\n## Installation\n\nMount the pump on a level concrete base and connect the inlet first.\n\n"
    b"## Maintenance\n\nClean the filter every 200 hours of operation and check the seals.\n\n"
    b"## Troubleshooting\n\nIf the pump hums but does not start, check the capacitor.\n"
)


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory):
    workdir = tmp_path_factory.mktemp("docent-conversations")
    env = {"DOCENT_LLM_PROVIDER": "extractive", "DOCENT_EMBED_PROVIDER": "hash", "DOCENT_MEMORY_TOKEN_LIMIT": "80"}
    files = [("orion.pdf", ORION_PDF), ("vega.pdf", VEGA_PDF), ("pump-guide.md", GUIDE)]
    srv = start_seeded_server(workdir, env, files)
    yield srv
    stop_server(srv)


def sidebar_chats(page: Page):
    """The conversations listed in the sidebar (one element each, holding its button)."""
    return page.get_by_test_id("stSidebar").locator("[class*='st-key-open_']")


def test_suggested_questions_and_follow_ups(seeded, page: Page) -> None:
    # The Chat page is the first page: no click on its link, whose run would clear the page
    # (the suggestions too) just after they were seen and before they were counted.
    page.goto(seeded.url)
    expect(page.get_by_role("heading", level=1).filter(has_text="Chat").first).to_be_visible()
    offered = page.locator("[class*='st-key-suggestion_'] button")
    expect(offered.first).to_be_visible()
    assert 1 <= offered.count() <= 3
    screenshot(page, "suggestions")
    question = offered.first.inner_text()
    offered.first.click()
    expect(page.get_by_test_id("stChatMessage").first).to_contain_text(question)
    expect(answers(page).first).to_contain_text("Answered in")
    expect(page.locator("[class*='st-key-suggestion_']")).to_have_count(0)  # only in a new chat

    follow_ups = answers(page).first.locator("[class*='st-key-follow_up_'] button")
    expect(follow_ups.first).to_be_visible()
    assert follow_ups.count() <= 2
    asked = follow_ups.first.inner_text().removeprefix("↪").strip()
    follow_ups.first.click()
    expect(page.get_by_test_id("stChatMessage").nth(2)).to_contain_text(asked)
    expect(answers(page).nth(1)).to_contain_text("Answered in")


def test_a_long_conversation_shows_the_summary_where_the_older_turns_were(seeded, page: Page) -> None:
    page.goto(seeded.url)
    go(page, "Chat")
    new_chat(page)
    for question in (
        "Where did the Orion project launch?",
        "What was the budget of the Orion project?",
        "Where does the Vega telescope stand?",
        "How often is the pump filter cleaned?",
        "What if the pump hums but does not start?",
    ):
        settled(page)
        count = answers(page).count()
        ask(page, question)
        expect(answers(page)).to_have_count(count + 1)
        expect(answers(page).last).to_contain_text("Answered in")
    block = page.get_by_test_id("stExpander").filter(has_text="Earlier turns, summarised")
    expect(block).to_have_count(1)
    block.locator("summary").click()
    expect(block).to_contain_text("The model now sees this summary instead of the messages below it")
    expect(block.get_by_test_id("stChatMessage").first).to_contain_text("Where did the Orion project launch?")
    expect(page.get_by_test_id("stChatMessage")).to_have_count(10)  # every turn still on the page
    screenshot(page, "summary")


def test_the_header_names_the_documents_in_scope(seeded, page: Page) -> None:
    page.goto(seeded.url)
    go(page, "Chat")
    new_chat(page)
    header = page.get_by_test_id("stCaptionContainer").filter(has_text="Conversation:")
    expect(header).to_contain_text("Searching all 3 document(s)")
    page.get_by_test_id("stMultiSelect").click()
    page.get_by_role("option", name="vega.pdf").click()
    page.keyboard.press("Escape")
    expect(header).to_contain_text("Searching 1 of 3 documents: vega.pdf")
    settled(page)
    ask(page, "Where did the Orion project launch?")  # only vega.pdf can answer
    answer = answers(page).last
    expect(answer).to_contain_text("Answered in")
    expect(answer).to_contain_text("don't mention Orion")  # not answered from a document out of scope
    sources = answer.locator("[class*='st-key-sources_'] button")
    assert all("vega.pdf" in sources.nth(i).inner_text() for i in range(sources.count()))


def test_the_chat_list_by_day_search_rename_and_no_empty_pile(seeded, page: Page) -> None:
    page.goto(seeded.url)
    go(page, "Chat")
    sidebar = page.get_by_test_id("stSidebar")
    new_chat(page)
    ask(page, "How often is the pump filter cleaned?")  # another chat, which the search below leaves out
    expect(answers(page).last).to_contain_text("Answered in")
    fresh = new_chat(page)
    for _ in range(2):  # the empty new chat is reused
        assert new_chat(page) == fresh
    expect(sidebar.get_by_role("button", name="💬 New chat")).to_have_count(1)

    ask(page, "   ")  # only spaces: nothing asked, nothing renamed, no error
    expect(page.get_by_text("Type a question first")).to_be_visible()
    expect(page.get_by_test_id("stException")).to_have_count(0)

    settled(page)
    ask(page, "Where does the Vega telescope stand?")
    expect(answers(page).last).to_contain_text("Atacama")
    expect(sidebar.get_by_role("button", name="💬 Where does the Vega telescope stand?")).to_be_visible()
    settled(page)
    sidebar.get_by_text("Rename, export or delete this chat").click()
    expect(sidebar.get_by_label("Name")).to_have_value("Where does the Vega telescope stand?")  # the new name

    expect(sidebar.get_by_text("Today", exact=True)).to_be_visible()
    total = sidebar_chats(page).count()
    assert total >= 2
    sidebar.get_by_placeholder("Search chats").fill("vega telescope")
    sidebar.get_by_placeholder("Search chats").press("Enter")
    expect(sidebar_chats(page)).not_to_have_count(total)
    for i in range(sidebar_chats(page).count()):
        assert "vega telescope" in sidebar_chats(page).nth(i).inner_text().lower()
    screenshot(page, "sidebar")


def test_settings_show_the_openai_fields_only_for_that_provider(tmp_path: Path, page: Page) -> None:
    srv = start_server(tmp_path, {"DOCENT_EMBED_PROVIDER": "hash"})  # the provider is not pinned here
    try:
        page.goto(srv.url)
        go(page, "Settings")
        expect(page.get_by_role("textbox", name="Cohere API key")).to_be_visible()
        expect(page.get_by_role("textbox", name="OpenAI-compatible base URL")).to_have_count(0)
        expect(page.get_by_role("textbox", name="OpenAI-compatible API key")).to_have_count(0)
        page.get_by_test_id("stSelectbox").filter(has_text="LLM provider").click()
        page.get_by_role("option", name="openai").click()
        expect(page.get_by_role("textbox", name="OpenAI-compatible base URL")).to_be_visible()
        expect(page.get_by_role("textbox", name="OpenAI-compatible model")).to_be_visible()
        expect(page.get_by_role("textbox", name="OpenAI-compatible API key")).to_have_attribute("type", "password")
        screenshot(page, "settings-openai")
    finally:
        stop_server(srv)


@pytest.mark.parametrize("scheme", ["dark", "light"])
def test_the_theme_follows_the_browser_preference(seeded, page: Page, scheme: str) -> None:
    page.emulate_media(color_scheme=scheme)
    page.goto(seeded.url)
    go(page, "Chat")
    ask(page, "What was the budget of the Orion project?")
    expect(answers(page).last).to_contain_text("Answered in")
    background = page.get_by_test_id("stApp").evaluate("(el) => getComputedStyle(el).backgroundColor")
    level = sum(int(c) for c in re.findall(r"\d+", background)[:3]) / 3
    assert (level < 60) if scheme == "dark" else (level > 200), background
    text = page.get_by_test_id("stChatMessage").first.evaluate("(el) => getComputedStyle(el).color")
    shade = sum(int(c) for c in re.findall(r"\d+", text)[:3]) / 3
    assert (shade > 180) if scheme == "dark" else (shade < 80), text  # readable on that background
    if scheme == "dark":
        screenshot(page, "dark")
