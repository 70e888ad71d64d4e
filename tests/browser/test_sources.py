"""Opening a source at its passage, in a real browser: the sources of an answer grouped
by file and page; for a PDF the page as an image with the passage highlighted, page by
page; for Markdown the passage marked in the text around it. Extractive answers, hashed
embeddings, documents indexed before the server starts.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import stop_server
from tests.browser.helpers import start_seeded_server
from tests.browser.test_browser import ORION_PDF, answers, ask, go, screenshot, source_button

pytestmark = [pytest.mark.browser, pytest.mark.timeout(900)]

NOTES = (
    b"# Field notes\n\nThe survey team arrived in March and set up camp near the ridge.\n\n"
    b"## Telescope\n\nThe Vega telescope stands in the Atacama desert in Chile. It was built by 40 engineers.\n\n"
    b"The next survey is planned for the autumn, weather permitting.\n"
)


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory):
    workdir = tmp_path_factory.mktemp("docent-sources")
    env = {"DOCENT_LLM_PROVIDER": "extractive", "DOCENT_EMBED_PROVIDER": "hash"}
    srv = start_seeded_server(workdir, env, [("orion.pdf", ORION_PDF), ("notes.md", NOTES)])
    yield srv
    stop_server(srv)


def image_width(page: Page, dialog) -> int:
    image = dialog.get_by_test_id("stImage").locator("img")
    expect(image).to_be_visible()
    page.wait_for_function("(img) => img.complete && img.naturalWidth > 0", arg=image.element_handle())
    return page.evaluate("(img) => img.naturalWidth", image.element_handle())


def test_a_pdf_source_opens_at_its_page_with_the_passage_highlighted(seeded, page: Page) -> None:
    page.goto(seeded.url)
    go(page, "Chat")
    ask(page, "What was the budget of the Orion project?")
    answer = answers(page).last
    expect(answer).to_contain_text("4 million euros")
    expect(answer).to_contain_text("Answered in")
    groups = answer.get_by_role("button", name="orion.pdf")
    labels = [groups.nth(i).inner_text() for i in range(groups.count())]
    assert len(labels) == len(set(labels)), labels  # one button per file and page

    source_button(answer, "orion.pdf · page 2").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text("orion.pdf")
    expect(dialog).to_contain_text("Page 2 of 2")
    expect(dialog).to_contain_text("highlighted on the page")
    assert image_width(page, dialog) > 600  # rendered at 1.5x: a 612 pt page is 918 px wide
    screenshot(page, "viewer-pdf")

    dialog.get_by_role("button", name="Previous").click()
    expect(dialog).to_contain_text("Page 1 of 2")
    expect(dialog.get_by_role("button", name="Previous")).to_be_disabled()
    assert image_width(page, dialog) > 600
    dialog.get_by_role("button", name="Next").click()
    expect(dialog).to_contain_text("Page 2 of 2")
    dialog.get_by_role("button", name="Close").click()
    expect(page.get_by_role("dialog")).to_have_count(0)


def test_a_text_source_is_marked_in_its_surroundings(seeded, page: Page) -> None:
    page.goto(seeded.url)
    go(page, "Chat")
    ask(page, "Where does the Vega telescope stand?")
    answer = answers(page).last
    expect(answer).to_contain_text("Atacama")
    source_button(answer, "notes.md").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text("marked in the text around it")
    context = dialog.locator(".st-key-viewer_context")
    expect(context).to_contain_text("set up camp near the ridge")  # the text before the passage
    marked = context.locator("span", has_text="Atacama desert").last
    expect(marked).to_be_visible()
    background = marked.evaluate("(el) => getComputedStyle(el).backgroundColor")
    assert background not in ("rgba(0, 0, 0, 0)", "transparent"), background
    screenshot(page, "viewer-text")
