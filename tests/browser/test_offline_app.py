"""The app in use, under strace: a browser drops a PDF and asks about it, and the server
(with the default MiniLM embedding) makes no look-up and no connection beyond this machine.

tests/test_offline.py traces the bare server start and the command line; this one traces
what only a session does: the pages' imports, building the context, an ingest and an
answer inside the server process. The ``page`` fixture checks the browser's own requests.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import start_server, stop_server
from tests.browser.test_browser import answers, ask, go, upload_and_wait
from tests.pdfgen import ZEPHYR_PAGES, make_pdf
from tests.tracing import ORT_TELEMETRY_STORE, OUTSIDE_SWITCHES, clean_env, read_trace, strace_prefix, strace_unusable

_UNUSABLE = strace_unusable()
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(_UNUSABLE is not None, reason=_UNUSABLE or ""),
    pytest.mark.timeout(600),
]


@pytest.fixture(autouse=True)
def _no_switches_from_outside(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in OUTSIDE_SWITCHES:
        monkeypatch.delenv(name, raising=False)


def test_upload_and_ask_in_the_app_look_nothing_up(tmp_path: Path, page: Page) -> None:
    trace, home = tmp_path / "server.trace", tmp_path / "home"
    env = clean_env(home, tmp_path / "data", DOCENT_LLM_PROVIDER="extractive")
    server = start_server(tmp_path, env, address=None, wrapper=strace_prefix(trace))
    try:
        page.goto(server.url)
        upload_and_wait(page, [("zephyr.pdf", make_pdf(ZEPHYR_PAGES), "application/pdf")])
        go(page, "Chat")
        ask(page, "How many litres per minute does the Zephyr pump deliver?")
        expect(answers(page).nth(0)).to_contain_text("42 litres per minute")
    finally:
        stop_server(server)
    report = read_trace(trace)
    assert report.outbound == [], report.summary()
    assert not (home / ORT_TELEMETRY_STORE).exists(), "onnxruntime telemetry started in the server"
