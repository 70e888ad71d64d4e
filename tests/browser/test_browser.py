"""Docent in a real browser: what only a browser shows.

Files dropped onto the upload area (a DataTransfer built in the page, as a drag from the
desktop delivers it), answers appearing in the chat, the conversation surviving a reload
and a server restart, and a page that never reaches beyond this machine (the ``page``
fixture fails the test on any request to another host).

Most tests use the extractive provider and hashed embeddings (fast, deterministic); the
one marked ``real_models`` uses the default local models. With ``DOCENT_SCREENSHOTS=1``
the main test saves docs/screenshots/{upload,chat,settings}.png for the README.
"""

from __future__ import annotations

import base64
import os
import re
import time
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.browser.conftest import REPO, start_server, stop_server
from tests.pdfgen import make_pdf

pytestmark = [pytest.mark.browser, pytest.mark.timeout(900)]

ORION_PDF = make_pdf(
    [
        "Orion project report\nThe Orion project launched in 2019 in Lisbon.",
        "Finances\nIts budget was 4 million euros, approved by the board.",
    ]
)
VEGA_PDF = make_pdf(["Vega telescope\nThe Vega telescope stands in the Atacama desert in Chile."])
SCREENSHOTS = REPO / "docs" / "screenshots"


# ============================================================================ helpers
def drop_files(page: Page, files: list[tuple[str, bytes, str]]) -> None:
    """Drag files onto the upload area: a DataTransfer holding Files built in the page."""
    payload = [{"name": n, "type": t, "data": base64.b64encode(b).decode()} for n, b, t in files]
    transfer = page.evaluate_handle(
        """(files) => {
            const dt = new DataTransfer();
            for (const f of files) {
                const bytes = Uint8Array.from(atob(f.data), (c) => c.charCodeAt(0));
                dt.items.add(new File([bytes], f.name, { type: f.type }));
            }
            return dt;
        }""",
        payload,
    )
    zone = page.get_by_test_id("stMain").get_by_test_id("stFileUploaderDropzone")
    for event in ("dragenter", "dragover", "drop"):
        zone.dispatch_event(event, {"dataTransfer": transfer})


def go(page: Page, title: str) -> None:
    page.get_by_test_id("stSidebarNav").get_by_role("link", name=title).click()
    # The page's heading. Until a run ends Streamlit also keeps the last run's elements (stale),
    # so a page opened again shows its heading twice while it runs: the first time one ran for
    # over 30 s (the first browser test of a cold run, a slow fake model) a strict locator failed.
    expect(page.get_by_role("heading", level=1).filter(has_text=title).first).to_be_visible()


def ask(page: Page, question: str) -> None:
    box = page.get_by_test_id("stChatInputTextArea")
    expect(box).to_be_enabled()
    box.fill(question)
    box.press("Enter")


def answers(page: Page) -> Locator:
    return page.get_by_test_id("stChatMessage").filter(has=page.get_by_test_id("stChatMessageAvatarAssistant"))


def source_button(answer: Locator, label: str) -> Locator:
    """The button under an answer that opens the sources from one file and page."""
    return answer.get_by_role("button", name=re.compile(re.escape(label))).first


def session_in_url(page: Page) -> str:
    [sid] = parse_qs(urlparse(page.url).query)["session"]
    return sid


def screenshot(page: Page, name: str) -> None:
    if os.environ.get("DOCENT_SCREENSHOTS") == "1":
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.wait_for_timeout(500)  # let the last frame settle
        page.screenshot(path=str(SCREENSHOTS / f"{name}.png"))


def upload_and_wait(page: Page, files: list[tuple[str, bytes, str]]) -> None:
    """Drop files on the Upload page; wait for each one's status and its row in the table."""
    go(page, "Upload")
    drop_files(page, files)
    main = page.get_by_test_id("stMain")
    for name, _, _ in files:
        expect(main).to_contain_text(f"{name}: indexed", timeout=180_000)
    for name, _, _ in files:
        expect(page.get_by_test_id("stDataFrame")).to_contain_text(name)


# ============================================================================ tests
def test_drop_pdfs_chat_reload_and_switch_sessions(server, page: Page) -> None:
    page.goto(server.url)
    upload_and_wait(page, [("orion.pdf", ORION_PDF, "application/pdf"), ("vega.pdf", VEGA_PDF, "application/pdf")])
    expect(page.get_by_test_id("stMain")).to_contain_text("orion.pdf: indexed (2 page(s)")
    screenshot(page, "upload")

    go(page, "Chat")
    ask(page, "Where did the Orion project launch?")
    expect(answers(page).nth(0)).to_contain_text("Lisbon")
    expect(source_button(answers(page).nth(0), "orion.pdf · page 1")).to_be_visible()

    ask(page, "What was its budget?")
    second = answers(page).nth(1)
    expect(second).to_contain_text("4 million euros")
    expect(second).to_contain_text(re.compile(r"Searched for: What was its budget\? \(.*Orion.*\)"))
    expect(second).to_contain_text("Answered in")
    screenshot(page, "chat")
    source_button(second, "orion.pdf · page 2").click()  # the viewer opens on the passage
    expect(page.get_by_role("dialog")).to_contain_text("approved by the board")
    page.get_by_role("dialog").get_by_role("button", name="Close").click()
    expect(page.get_by_role("dialog")).to_have_count(0)

    first_session = session_in_url(page)
    page.reload()  # the URL carries the session: the same conversation comes back
    expect(answers(page)).to_have_count(2)
    expect(answers(page).nth(1)).to_contain_text("4 million euros")
    assert session_in_url(page) == first_session

    sidebar = page.get_by_test_id("stSidebar")
    sidebar.get_by_role("button", name="New chat").click()
    expect(page).not_to_have_url(re.compile(first_session))
    expect(answers(page)).to_have_count(0)
    second_session = session_in_url(page)
    assert second_session != first_session

    sidebar.locator(f".st-key-open_{first_session} button").click()
    expect(answers(page)).to_have_count(2)
    assert session_in_url(page) == first_session

    go(page, "Settings")
    expect(page.get_by_text("Set by environment variables")).to_be_visible()
    screenshot(page, "settings")


def test_markup_in_a_document_stays_inert(server, page: Page) -> None:
    hostile = (
        b'# Launch notes\n\nThe launch code is <img src="http://evil.example/x.png" onerror="window.pwned=1">'
        b" <script>window.pwned=2</script> ![pixel](http://evil.example/p.png) [go](javascript:window.pwned=3).\n"
    )
    page.goto(server.url)
    upload_and_wait(page, [("hostile.md", hostile, "text/markdown")])
    go(page, "Chat")
    ask(page, "What is the launch code?")
    answer = answers(page).last
    expect(answer).to_contain_text('<img src="http://evil.example/x.png"')  # shown as text
    expect(answer).to_contain_text("<script>window.pwned=2</script>")
    assert answer.locator("img, script, a[href^='javascript']").count() == 0
    source_button(answer, "hostile.md").click()
    expect(page.get_by_role("dialog")).to_contain_text("<script>window.pwned=2</script>")  # the passage, as text
    assert page.get_by_role("dialog").locator("img, script, a[href^='javascript']").count() == 0
    assert page.evaluate("window.pwned") is None


def test_a_typed_key_is_used_for_the_session_only(server, page: Page) -> None:
    page.goto(server.url)
    go(page, "Settings")
    key_box = page.get_by_role("textbox", name="Cohere API key")  # the OpenAI one shows with that provider only
    expect(key_box).to_have_attribute("type", "password")
    key_box.fill("co-browser-typed-key-0123456789")
    page.get_by_role("button", name="Use these keys").click()
    expect(page.get_by_text("Cohere key: entered in this browser session")).to_be_visible()
    expect(page.get_by_role("textbox", name="Cohere API key")).to_have_value("")  # never shown back
    saved = server.data_dir / "settings.json"
    assert not saved.exists() or "browser-typed-key" not in saved.read_text()

    page.reload()  # a new browser session: the key is gone
    expect(page.get_by_text("Cohere key: not set")).to_be_visible()


def test_restart_and_deep_link_bring_the_conversation_back(tmp_path: Path, page: Page) -> None:
    env = {"DOCENT_LLM_PROVIDER": "extractive", "DOCENT_EMBED_PROVIDER": "hash"}
    first = start_server(tmp_path, env)
    try:
        page.goto(first.url)
        upload_and_wait(page, [("vega.pdf", VEGA_PDF, "application/pdf")])
        go(page, "Chat")
        ask(page, "Where is the Vega telescope?")
        expect(answers(page).first).to_contain_text("Atacama")
        sid = session_in_url(page)
    finally:
        stop_server(first)

    second = start_server(tmp_path, env)  # same data folder, fresh process
    try:
        # The first request of the new process is a deep link to another page.
        page.goto(f"{second.url}/upload?session={sid}")
        expect(page.get_by_role("heading", level=1)).to_contain_text("Upload")
        expect(page.get_by_test_id("stSidebarNav")).to_contain_text("Settings")  # not the file name
        expect(page.get_by_test_id("stSidebar")).to_contain_text("Conversations")  # app.py ran
        expect(page.get_by_test_id("stDataFrame")).to_contain_text("vega.pdf")
        go(page, "Chat")
        expect(answers(page).first).to_contain_text("Atacama")
        expect(source_button(answers(page).first, "vega.pdf · page 1")).to_be_visible()
        assert session_in_url(page) == sid
    finally:
        stop_server(second)


@pytest.mark.real_models
def test_real_models_stream_an_answer(tmp_path: Path, page: Page) -> None:
    """Default settings: MiniLM embeddings and the local LLM (assembled once into
    DOCENT_MODEL_CACHE when set, else into the data folder)."""
    env = {}
    if os.environ.get("DOCENT_MODEL_CACHE"):
        env["DOCENT_MODEL_CACHE"] = os.environ["DOCENT_MODEL_CACHE"]
    srv = start_server(tmp_path, env)
    try:
        page.goto(srv.url)
        upload_and_wait(page, [("orion.pdf", ORION_PDF, "application/pdf")])
        go(page, "Chat")
        # The Chat page with documents starts loading the local model in the background.
        expect(page.get_by_text("Loading the local model in the background")).to_be_visible(timeout=60_000)
        ask(page, "In which city did the Orion project launch? Answer in one full sentence.")
        answer = answers(page).first
        # Sources are listed before the first token; from then on the text grows until "Answered in".
        expect(answer).to_contain_text("Sources: orion.pdf", timeout=600_000)
        lengths = _watch_growth(answer, timeout=600)
        assert len(set(lengths)) >= 3, f"the answer did not grow while streaming: {lengths}"
        expect(answer).to_contain_text("Lisbon")
        # The first answer waited for the rest of that load (its time says so, and counts it),
        # or found the model ready.
        expect(answer).to_contain_text(re.compile(r"Answered in [\d.]+ s"))
        timing = re.search(r"Answered in ([\d.]+) s(?:, including ([\d.]+) s loading the model)?", answer.inner_text())
        assert timing and (timing[2] is None or float(timing[2]) <= float(timing[1]))
        expect(answer).to_contain_text("by local (qwen2.5-coder-1.5b)")

        ask(page, "What was its budget?")
        follow_up = answers(page).nth(1)
        expect(follow_up).to_contain_text("Answered in", timeout=600_000)
        expect(follow_up).to_contain_text("Searched for")
        expect(follow_up).not_to_contain_text("loading the model")  # loaded once
        expect(source_button(follow_up, "orion.pdf · page")).to_be_visible()
    finally:
        stop_server(srv)


def _watch_growth(message: Locator, timeout: float) -> list[int]:
    """Lengths of a chat message's text, polled until its answer is complete."""
    deadline = time.monotonic() + timeout
    lengths: list[int] = []
    while time.monotonic() < deadline:
        text = message.inner_text()
        lengths.append(len(text))
        if "Answered in" in text:
            return lengths
        time.sleep(0.2)
    raise AssertionError(f"no complete answer after {timeout} s: {lengths[-5:]}")
