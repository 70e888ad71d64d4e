"""Uploads seen and stopped from another app process (``rag_core.jobs`` over the database):
two ``streamlit run`` processes on one data folder, as a team's processes share one database.
A batch dropped in one is shown running on the other's Upload page, and its Cancel there stops
it; the first process's page then says the files after it were cancelled."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests.browser.conftest import start_server, stop_server
from tests.browser.test_browser import drop_files, go

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

# 40 files of ~150 KB: each is read, split and written before the next starts, long enough
# for the other process's page to see the batch running.
FILES = [
    (
        f"notes-{i:02d}.txt",
        (f"Pump station {i} log. " + "Valve {k} opened at dawn and closed at dusk. " * 3000).encode(),
        "text/plain",
    )
    for i in range(40)
]


def test_an_upload_running_in_one_process_is_seen_and_cancelled_from_another(tmp_path: Path, browser: Browser) -> None:
    data = tmp_path / "shared-data"
    env = {"DOCENT_LLM_PROVIDER": "extractive", "DOCENT_EMBED_PROVIDER": "hash", "DOCENT_DATA_DIR": str(data)}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = start_server(tmp_path / "a", env)
    second = start_server(tmp_path / "b", env)
    one = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    other = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    try:
        one.goto(first.url)
        go(one, "Upload")
        drop_files(one, FILES)
        expect(one.get_by_test_id("stMain")).to_contain_text("Indexing 40 file(s)", timeout=60_000)

        other.goto(f"{second.url}/upload")  # another process, another browser session
        main = other.get_by_test_id("stMain")
        expect(main).to_contain_text("Indexing 40 file(s)", timeout=60_000)
        expect(main).to_contain_text("notes-00.txt")
        other.get_by_role("button", name="Cancel").click()

        # the process running it stops: its own page and the other's say which files were cancelled
        expect(one.get_by_test_id("stMain")).to_contain_text("cancelled", timeout=60_000)
        expect(main).to_contain_text("cancelled", timeout=60_000)
        expect(main).not_to_contain_text("Indexing 40 file(s)")
        expect(one.get_by_test_id("stMain")).not_to_contain_text("notes-39.txt: indexed")
    finally:
        stop_server(second)
        stop_server(first)
