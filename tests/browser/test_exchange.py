"""Export a conversation from one Docent and import it into another with a fresh data
folder, in a real browser: the JSON download, the Markdown download, and the import
report (the documents cited but not indexed there).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.browser.conftest import start_server, stop_server
from tests.browser.helpers import start_seeded_server
from tests.browser.test_browser import ORION_PDF, VEGA_PDF, answers, ask, go, screenshot, session_in_url

pytestmark = [pytest.mark.browser, pytest.mark.timeout(900)]

ENV = {"DOCENT_LLM_PROVIDER": "extractive", "DOCENT_EMBED_PROVIDER": "hash"}


def download(page: Page, name: str, folder: Path) -> Path:
    button = page.get_by_test_id("stSidebar").get_by_role("button", name=name)
    expect(page.get_by_test_id("stStatusWidget")).to_have_count(0, timeout=60_000)  # the run is over
    expect(button).to_be_enabled()
    # Known, not yet fixed: in about one full run of two the first click on a sidebar download
    # brings nothing (Streamlit's media link of a rerun replaced?). A user clicks again; so does
    # this test, once. The download itself is still required.
    try:
        with page.expect_download(timeout=30_000) as done:
            button.click()
        done.value  # noqa: B018 (waits for it)
    except PlaywrightTimeout:
        with page.expect_download(timeout=120_000) as done:
            button.click()
    path = folder / done.value.suggested_filename
    done.value.save_as(path)
    return path


def test_export_then_import_into_a_fresh_data_folder(tmp_path: Path, page: Page) -> None:
    first = start_seeded_server(tmp_path / "one", ENV, [("orion.pdf", ORION_PDF), ("vega.pdf", VEGA_PDF)])
    try:
        page.goto(first.url)
        go(page, "Chat")
        ask(page, "Where did the Orion project launch?")
        expect(answers(page).last).to_contain_text("Lisbon")
        ask(page, "What was its budget?")
        expect(answers(page).last).to_contain_text("4 million euros")
        sidebar = page.get_by_test_id("stSidebar")
        sidebar.get_by_text("Rename, export or delete this chat").click()
        exported = download(page, "JSON", tmp_path)
        readable = download(page, "Markdown", tmp_path)
    finally:
        stop_server(first)

    data = json.loads(exported.read_text())
    assert data["docent_export"] == 1 and len(data["messages"]) == 4
    assert exported.name.endswith(".docent.json")
    text = readable.read_text()
    assert "Where did the Orion project launch?" in text and "4 million euros" in text and "orion.pdf" in text

    (tmp_path / "two").mkdir()
    second = start_server(tmp_path / "two", ENV)  # a fresh data folder, no document
    try:
        page.goto(second.url)
        go(page, "Chat")
        sidebar = page.get_by_test_id("stSidebar")
        sidebar.get_by_role("button", name="Import a chat").click()
        sidebar.get_by_test_id("stFileUploaderDropzoneInput").set_input_files(str(exported))
        main = page.get_by_test_id("stMainBlockContainer")
        expect(main).to_contain_text("Imported 4 message(s)", timeout=60_000)
        missing = main.get_by_text("Cited but not indexed here")
        expect(missing).to_contain_text("orion.pdf")  # this folder has no document at all
        expect(missing).to_contain_text("vega.pdf")
        expect(answers(page)).to_have_count(2)
        expect(answers(page).last).to_contain_text("4 million euros")
        named = page.get_by_test_id("stSidebar").get_by_role("button", name="Where did the Orion project launch?")
        expect(named).to_have_count(1)
        page.get_by_role("heading", level=1).scroll_into_view_if_needed()
        screenshot(page, "import")
        imported = session_in_url(page)

        page.reload()  # the imported chat is an ordinary session now, and the file is not read twice
        expect(answers(page)).to_have_count(2)
        assert session_in_url(page) == imported
        expect(named).to_have_count(1)
    finally:
        stop_server(second)
