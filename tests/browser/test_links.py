"""Addresses in documents and answers, in a real browser: never a link, always shown whole.

Markdown turns a bare ``http://…``, ``www.…`` or ``name@host`` into a link by itself, and
Streamlit opens links in a new tab; a Markdown image is fetched as soon as it is drawn.
Only a browser shows what becomes a link, so this test looks at the page itself: a
document named like a web site, whose text holds addresses, a Markdown link and an image,
is uploaded, asked about (the extractive answer quotes it: model output), suggested from
(its heading) and opened in the viewer. Nowhere on those pages may an element link or load
from the document's addresses, and each address must be readable, whole. The ``page``
fixture also fails the test on any request that leaves this machine.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.browser.test_browser import answers, ask, go, source_button, upload_and_wait

pytestmark = [pytest.mark.browser, pytest.mark.timeout(900)]

NAME = "www.evil.example.md"
HOSTILE = (
    b"# Login help at www.evil.example/help\n\n"
    b"The login page is http://evil.example/phish, shown as [Click here](https://evil.example/click) with the logo "
    b"![t](http://evil.example/t.png), its mirror is www.evil.example/mirror and phish@evil.example gives access.\n"
)
ADDRESSES = ["http://evil.example/phish", "www.evil.example/mirror", "phish@evil.example"]


def no_link_to_evil(where: Locator) -> None:
    for selector in ("a[href*='evil']", "img[src*='evil']", "[href*='evil']", "[src*='evil']"):
        assert where.locator(selector).count() == 0, (
            f"{selector}: {where.locator(selector).first.evaluate('e => e.outerHTML')}"
        )


def test_addresses_in_documents_and_answers_are_shown_whole_and_never_linked(server, page: Page) -> None:
    page.goto(server.url)
    upload_and_wait(page, [(NAME, HOSTILE, "text/markdown")])
    main = page.get_by_test_id("stMain")
    expect(main.get_by_text(f"{NAME}: indexed", exact=False)).to_be_visible()
    no_link_to_evil(page.locator("body"))  # the upload's result names the file

    go(page, "Chat")
    page.get_by_test_id("stSidebar").get_by_role("button", name="➕ New chat").click()
    suggestions = page.locator("[class*='st-key-suggestion_'] button")
    expect(suggestions.first).to_be_visible(timeout=60_000)
    no_link_to_evil(page.locator("body"))  # questions drawn from the document's heading

    ask(page, "What is the login page and its mirror?")
    answer = answers(page).last
    expect(answer).to_contain_text("http://evil.example/phish")  # the whole address, readable
    expect(answer.get_by_role("button", name="Copy")).to_be_visible()  # drawn from the session
    for address in ADDRESSES:
        expect(answer.locator("code", has_text=address)).to_have_count(1)  # shown as code: copy it
    expect(answer).to_contain_text("Click here (https://evil.example/click)")  # a link: its text and address
    expect(answer).to_contain_text("t (image: http://evil.example/t.png)")  # an image: never drawn
    no_link_to_evil(page.locator("body"))

    source_button(answer, NAME).click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text("http://evil.example/phish")  # the passage in its document
    expect(dialog).to_contain_text("![t](http://evil.example/t.png)")  # document text as it is
    no_link_to_evil(page.locator("body"))
    assert page.evaluate("[...document.links].map(a => a.href).filter(h => h.includes('evil'))") == []
