"""Export a conversation from one Docent and import it into another with a fresh data
folder, in a real browser: the JSON download, the Markdown download, and the import
report (the documents cited but not indexed there).
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from playwright.sync_api import Page, WebSocketRoute, expect

from tests.browser.conftest import start_server, stop_server
from tests.browser.helpers import start_seeded_server
from tests.browser.test_browser import ORION_PDF, VEGA_PDF, answers, ask, go, screenshot, session_in_url

pytestmark = [pytest.mark.browser, pytest.mark.timeout(900)]

ENV = {"DOCENT_LLM_PROVIDER": "extractive", "DOCENT_EMBED_PROVIDER": "hash"}


def download(page: Page, name: str, folder: Path) -> Path:
    """Click a sidebar download once, as soon as it is there, and keep the file."""
    button = page.get_by_test_id("stSidebar").get_by_role("button", name=name)
    expect(button).to_be_enabled()
    with page.expect_download(timeout=60_000) as done:
        button.click()
    path = folder / done.value.suggested_filename
    done.value.save_as(path)
    return path


def open_manage(page: Page) -> None:
    """Open "Rename, export or delete this chat": the exports are made then."""
    page.get_by_test_id("stSidebar").get_by_text("Rename, export or delete this chat").click()
    expect(page.get_by_test_id("stSidebar").get_by_role("button", name="JSON")).to_be_visible(timeout=60_000)


def test_export_then_import_into_a_fresh_data_folder(tmp_path: Path, page: Page) -> None:
    first = start_seeded_server(tmp_path / "one", ENV, [("orion.pdf", ORION_PDF), ("vega.pdf", VEGA_PDF)])
    try:
        page.goto(first.url)
        go(page, "Chat")
        ask(page, "Where did the Orion project launch?")
        expect(answers(page).last).to_contain_text("Lisbon")
        ask(page, "What was its budget?")
        expect(answers(page).last).to_contain_text("4 million euros")
        expect(answers(page).last.get_by_role("button", name="Copy")).to_be_visible()  # drawn from the session
        open_manage(page)
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


def test_a_download_clicked_while_the_page_runs_again_still_comes(tmp_path: Path, page: Page) -> None:
    """The page runs again (here: the chat search typed in) and the browser has not yet
    received the new run's buttons when the user clicks: the click must still download.

    The browser is held to that moment: the server's messages are kept from the page (a
    WebSocket route) while the run happens, then the button it still shows is clicked. A
    download made at the click by a callable failed here every time ("Deferred file … not
    found": each run registers the callable under a new id and drops the previous run's),
    which is why a first click sometimes brought nothing."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    held: list[str | bytes] = []
    holding = {"on": False}
    finished: list[bool] = []
    pages: list[WebSocketRoute] = []

    def route(ws: WebSocketRoute) -> None:
        server = ws.connect_to_server()
        pages.append(ws)

        def from_server(message: str | bytes) -> None:
            if not holding["on"]:
                ws.send(message)
                return
            held.append(message)
            if isinstance(message, bytes):
                msg = ForwardMsg()
                msg.ParseFromString(message)
                if msg.WhichOneof("type") == "script_finished":
                    finished.append(True)

        server.on_message(from_server)

    srv = start_seeded_server(tmp_path / "one", ENV, [("orion.pdf", ORION_PDF)])
    try:
        page.route_web_socket(re.compile(r".*/_stcore/stream"), route)
        page.goto(srv.url)
        go(page, "Chat")
        ask(page, "Where did the Orion project launch?")
        expect(answers(page).last.get_by_role("button", name="Copy")).to_be_visible(timeout=120_000)
        open_manage(page)
        expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning")

        holding["on"] = True  # from here the page sees nothing new from the server
        search = page.get_by_test_id("stSidebar").get_by_placeholder("🔍 Search chats")
        search.fill("Orion")
        search.press("Enter")
        deadline = time.monotonic() + 120
        while not finished and time.monotonic() < deadline:  # the run the page has not seen ends
            page.wait_for_timeout(200)
        assert finished, "the run the search asked for did not end"
        with page.expect_download(timeout=30_000) as done:
            page.get_by_test_id("stSidebar").get_by_role("button", name="JSON").click()  # once
            holding["on"] = False
            for message in held:  # what the page missed, in order
                pages[-1].send(message)
        path = tmp_path / done.value.suggested_filename
        done.value.save_as(path)
    finally:
        stop_server(srv)
    data = json.loads(path.read_text())
    assert [m["role"] for m in data["messages"]] == ["user", "assistant"]
    assert "Lisbon" in data["messages"][1]["content"]
