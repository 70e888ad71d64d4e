"""What the browser tests of the chat share: a server whose documents are already indexed
(``python -m rag_core ingest`` into its data folder, a real process, then ``streamlit run``:
test_browser.py tests the upload itself), and waiting for a run to end before the next step.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlparse

from playwright.sync_api import Page, expect

from tests.browser.conftest import REPO, SCRUBBED, Server, start_server


def start_seeded_server(workdir: Path, env: dict[str, str], files: list[tuple[str, bytes]]) -> Server:
    folder = workdir / "seed"
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, data in files:
        (folder / name).write_bytes(data)
        paths.append(str(folder / name))
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("DOCENT_") and k not in SCRUBBED}
    full_env.update({"DOCENT_DATA_DIR": str(workdir / "data"), **env})
    subprocess.run(
        [sys.executable, "-m", "rag_core", "ingest", "--strict", *paths],
        cwd=REPO,
        env=full_env,
        check=True,
        capture_output=True,
        timeout=300,
    )
    return start_server(workdir, env)


def settled(page: Page) -> None:
    """Wait until the page's script run has finished (Streamlit's running indicator gone)."""
    expect(page.get_by_test_id("stStatusWidget")).to_have_count(0, timeout=120_000)


def new_chat(page: Page) -> str:
    """Click "New chat" and wait for the new (or reused empty) conversation; returns its id."""
    settled(page)
    page.get_by_test_id("stSidebar").get_by_role("button", name="➕ New chat").click()
    expect(page.get_by_test_id("stChatMessage")).to_have_count(0)
    settled(page)
    expect(page).to_have_url(re.compile(r"[?&]session="))
    return parse_qs(urlparse(page.url).query)["session"][0]
