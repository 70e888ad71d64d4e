"""Nothing leaves this machine: the server and the command line, each run under strace.

Each test runs real processes with a fresh data folder and a fresh HOME, traces every
``connect``, ``bind`` and ``send*`` of the process tree (tests/tracing.py), and fails on
any DNS query or any address outside loopback, including attempts that failed (CI runs
without a network, where they fail quietly).

The onnxruntime telemetry uploader waits ~9 s before its first look-up, longer than a
small ingest takes; what it always does at once is open its event store under
``~/.cache/Microsoft``. So the tests also require that store never to appear.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.browser.conftest import REPO, start_server, stop_server
from tests.pdfgen import ZEPHYR_PAGES, make_pdf, make_scanned_pdf
from tests.tracing import (
    ORT_TELEMETRY_STORE,
    OUTSIDE_SWITCHES,
    clean_env,
    read_trace,
    strace_prefix,
    strace_unusable,
)

_UNUSABLE = strace_unusable()
pytestmark = [
    pytest.mark.skipif(_UNUSABLE is not None, reason=_UNUSABLE or ""),
    pytest.mark.timeout(600),
    pytest.mark.slow,  # real processes (streamlit, the CLI) under strace
]


@pytest.fixture(autouse=True)
def _no_switches_from_outside(monkeypatch: pytest.MonkeyPatch) -> None:
    """start_server passes this process's environment on: take the test run's switches out."""
    for name in OUTSIDE_SWITCHES:
        monkeypatch.delenv(name, raising=False)


def traced_cli(tmp_path: Path, name: str, env: dict[str, str], *args: str) -> tuple[str, Path]:
    """``python -m rag_core ARGS`` under strace; its stdout and the trace file."""
    trace = tmp_path / f"{name}.trace"
    done = subprocess.run(
        [*strace_prefix(trace), sys.executable, "-m", "rag_core", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout, trace


def assert_stayed_home(trace: Path, home: Path) -> None:
    report = read_trace(trace)
    assert report.outbound == [], report.summary()
    assert not (home / ORT_TELEMETRY_STORE).exists(), "onnxruntime telemetry started (ORT_DISABLE_TELEMETRY unset?)"


def test_the_server_binds_loopback_only_and_looks_nothing_up(tmp_path: Path) -> None:
    """``streamlit run app.py`` as the README says it, headless, with only the bind address
    left to .streamlit/config.toml: it must listen on 127.0.0.1 and probe for no address."""
    trace = tmp_path / "server.trace"
    env = clean_env(tmp_path / "home", tmp_path / "data")
    server = start_server(tmp_path, env, address=None, wrapper=strace_prefix(trace))
    try:
        for path in ("/", "/_stcore/health", "/_stcore/host-config"):
            with urllib.request.urlopen(server.url + path, timeout=30) as response:
                assert response.status == 200
    finally:
        stop_server(server)
    report = read_trace(trace)
    port = int(server.url.rsplit(":", 1)[1])
    assert report.listening == {("127.0.0.1", port)}, f"the server listens on {report.listening}"
    assert report.outbound == [], report.summary()


def test_ingest_and_ask_with_the_default_models_look_nothing_up(tmp_path: Path) -> None:
    """An ingest and a question through the command line, with the default MiniLM embedding;
    the ingest includes a scan, read by the OCR engine in the parse worker (traced too)."""
    home, data = tmp_path / "home", tmp_path / "data"
    make_pdf(ZEPHYR_PAGES, tmp_path / "zephyr.pdf")
    make_scanned_pdf(["Pump curve: 30 litres at 5 metres."], tmp_path / "scan.pdf")
    env = clean_env(home, data, DOCENT_LLM_PROVIDER="extractive")

    out, trace = traced_cli(
        tmp_path, "ingest", env, "ingest", "--json", *(str(tmp_path / n) for n in ("zephyr.pdf", "scan.pdf"))
    )
    results = [json.loads(line) for line in out.splitlines()]
    assert [(r["status"], r["ocr_pages"]) for r in results] == [("indexed", 0), ("indexed", 1)], out
    assert_stayed_home(trace, home)

    out, trace = traced_cli(tmp_path, "ask", env, "ask", "--json", "How many litres per minute does the pump deliver?")
    answer = json.loads(out)
    assert answer["sources"] and answer["sources"][0]["file"] == "zephyr.pdf", out
    assert_stayed_home(trace, home)


def test_an_ingest_ignores_a_tiktoken_cache_elsewhere(tmp_path: Path) -> None:
    """With TIKTOKEN_CACHE_DIR set (by other tools on the machine) to a folder without
    cl100k_base, LlamaIndex would download it, and offline the ingest would fail."""
    home, data = tmp_path / "home", tmp_path / "data"
    make_pdf(ZEPHYR_PAGES, tmp_path / "zephyr.pdf")
    (tmp_path / "tiktoken").mkdir()
    env = clean_env(home, data, DOCENT_EMBED_PROVIDER="hash", TIKTOKEN_CACHE_DIR=str(tmp_path / "tiktoken"))

    out, trace = traced_cli(tmp_path, "ingest", env, "ingest", "--json", str(tmp_path / "zephyr.pdf"))
    assert json.loads(out)["status"] == "indexed", out
    assert_stayed_home(trace, home)
    assert list((tmp_path / "tiktoken").iterdir()) == []
