from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rag_core import build_context, load_settings
from tests.fakes import ScriptedLLM
from tests.pdfgen import ZEPHYR_PAGES, make_pdf

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("DOCENT_SHARED_DIR", ROOT.parent / "shared")) / "data"

_CLEARED = ("OPENAI_API_KEY", "COHERE_API_KEY")


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch, tmp_path):
    """No provider keys and no DOCENT_* settings leak in from the machine; state in tmp_path."""
    for key in list(os.environ):
        if key.startswith("DOCENT_") and key not in ("DOCENT_MODEL_CACHE", "DOCENT_SHARED_DIR", "DOCENT_SCREENSHOTS"):
            monkeypatch.delenv(key, raising=False)
    for key in _CLEARED:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("DOCENT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("ANONYMIZED_TELEMETRY", "False")
    # Suggested questions wait for 15 s without answers; here answers of earlier tests must not
    # delay them (tests/test_suggestions.py sets it where it is what is tested).
    monkeypatch.setenv("DOCENT_SUGGEST_QUIET_S", "0")


@pytest.fixture
def settled_reader():
    """No file-reading worker still being started ahead: a page test before this one in the
    same process may have opened the Upload page (``IngestionService.warm``), and its worker
    must land before a test counts the idle ones."""
    from rag_core.loaders import budget

    deadline = time.monotonic() + 120
    while budget._warming and time.monotonic() < deadline:
        time.sleep(0.05)


@pytest.fixture
def make_settings(tmp_path):
    def make(**overrides):
        base = {"data_dir": tmp_path / "data", "embed_provider": "hash", "llm_provider": "extractive"}
        base.update(overrides)
        return load_settings({}, **base)

    return make


@pytest.fixture
def llm():
    return ScriptedLLM()


@pytest.fixture
def ctx(make_settings, llm):
    return build_context(make_settings(), llm=llm)


@pytest.fixture
def three_docs(tmp_path):
    """A folder of three small documents: a 3-page PDF, a text file and a Markdown file."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    make_pdf(ZEPHYR_PAGES, folder / "zephyr.pdf")
    (folder / "bananas.txt").write_text("Bananas are yellow fruit that grow in bunches on large herbaceous plants.")
    (folder / "tea.md").write_text("# Tea\nGreen tea is steamed or pan-fired soon after picking.\n")
    return folder


@pytest.fixture
def shared_data():
    if not SHARED.is_dir():
        pytest.skip(f"../shared/data not found at {SHARED} (set DOCENT_SHARED_DIR)")
    return SHARED


def model_cache_dir() -> Path:
    return Path(os.environ.get("DOCENT_MODEL_CACHE", Path.home() / ".cache" / "docent-test-models"))


@pytest.fixture(scope="session")
def postgres_server():
    """A real PostgreSQL server (Debian's binaries) for the whole run, started on first use;
    the tests that need it skip, saying why, where it cannot be started."""
    from tests.pgserver import postgres_missing, remove, start_postgres

    why = postgres_missing()
    if why:
        pytest.skip(why)
    server = start_postgres()
    yield server
    from rag_core import postgres

    postgres.close_all()
    remove(server)


@pytest.fixture
def pg_url(postgres_server, request):
    """A new, empty database on that server for one test."""
    import re
    import uuid

    name = re.sub(r"[^a-z0-9]+", "_", request.node.name.lower())[:40] + "_" + uuid.uuid4().hex[:6]
    return postgres_server.create_database(name)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def chroma_server(tmp_path):
    """A real ``chroma run`` server on a free loopback port for one test (its port)."""
    chroma = Path(sys.executable).parent / "chroma"
    if not chroma.exists():
        pytest.skip("the chroma CLI is not installed")
    port = free_port()
    proc = subprocess.Popen(
        [str(chroma), "run", "--path", str(tmp_path / "server"), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
    )
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.3)
    else:
        proc.kill()
        pytest.fail("chroma run did not start")
    yield port
    proc.terminate()
    proc.wait(timeout=20)
