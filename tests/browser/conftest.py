"""A real Docent server (``streamlit run app.py``) and a headless Chromium that watches
every request it makes.

The server runs in a subprocess with its own data folder, so pytest-socket does not see
its traffic; instead every request the page makes is checked here and any that leaves
the loopback interface fails the test (and is aborted before it goes out).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Route

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
]
LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}
# Variables that would change what the server does behind the test's back.
SCRUBBED = ("OPENAI_API_KEY", "COHERE_API_KEY")


@dataclass
class Server:
    url: str
    data_dir: Path
    log: Path
    process: subprocess.Popen = field(repr=False)
    wrapped: bool = False  # started under a wrapper (strace), which passes no signal on

    def log_tail(self, chars: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-chars:]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


def start_server(
    workdir: Path,
    env: dict[str, str],
    timeout: float = 90,
    *,
    address: str | None = "127.0.0.1",
    wrapper: Sequence[str] = (),
) -> Server:
    """``streamlit run app.py`` on a free loopback port; returns once /_stcore/health answers.

    ``address=None`` leaves the bind address to .streamlit/config.toml; ``wrapper`` goes
    before the command (tests/tracing.py runs the server under strace).
    """
    port = _free_port()
    data_dir = workdir / "data"
    log = workdir / "streamlit.log"
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("DOCENT_") and k not in SCRUBBED}
    full_env.update({"DOCENT_DATA_DIR": str(data_dir), "PYTHONUNBUFFERED": "1", **env})
    cmd = [
        *wrapper, sys.executable, "-m", "streamlit", "run", "app.py",
        "--server.headless", "true",
        "--server.port", str(port),
        *(["--server.address", address] if address else []),
        "--browser.gatherUsageStats", "false",
        "--server.fileWatcherType", "none",
    ]  # fmt: skip
    with open(log, "wb") as out:
        process = subprocess.Popen(cmd, cwd=REPO, env=full_env, stdout=out, stderr=subprocess.STDOUT)
    server = Server(f"http://127.0.0.1:{port}", data_dir, log, process, wrapped=bool(wrapper))
    deadline = time.monotonic() + timeout
    while not _healthy(server.url):
        if process.poll() is not None or time.monotonic() > deadline:
            stop_server(server)
            pytest.fail(f"streamlit did not start:\n{server.log_tail()}")
        time.sleep(0.3)
    return server


def _signal_server(server: Server, signum: int) -> None:
    """Signal streamlit: the process started, or under a wrapper, the one the wrapper started."""
    pids = [server.process.pid]
    if server.wrapped:
        children = Path(f"/proc/{server.process.pid}/task/{server.process.pid}/children")
        with contextlib.suppress(OSError):
            pids = [int(pid) for pid in children.read_text().split()] or pids
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)


def stop_server(server: Server) -> None:
    if server.process.poll() is None:
        _signal_server(server, signal.SIGTERM)
        try:
            server.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            _signal_server(server, signal.SIGKILL)
            server.process.kill()
            server.process.wait(timeout=10)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    """A server with the fast, deterministic providers: extractive answers, hashed embeddings."""
    workdir = tmp_path_factory.mktemp("docent-server")
    srv = start_server(workdir, {"DOCENT_LLM_PROVIDER": "extractive", "DOCENT_EMBED_PROVIDER": "hash"})
    yield srv
    stop_server(srv)


@pytest.fixture(scope="session")
def browser():
    if not CHROMIUM.exists():
        pytest.skip("Debian's chromium is not installed (apt-get install -y chromium)")
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=30_000)  # a fresh server builds its index on the first page: not instant on 2 cores
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    """A fresh browser context whose every request must stay on this machine."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    seen: list[str] = []
    outside: list[str] = []

    def is_loopback(url: str) -> bool:
        parsed = urlparse(url)
        return parsed.scheme in ("data", "blob", "about") or parsed.hostname in LOOPBACK

    def guard(route: Route) -> None:
        if is_loopback(route.request.url):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    context.route("**/*", guard)
    pg = context.new_page()
    pg.on("request", lambda request: seen.append(request.url))
    pg.on("websocket", lambda ws: seen.append(ws.url))
    pg.set_default_timeout(30_000)
    yield pg
    context.close()
    leaks = sorted(set(outside) | {u for u in seen if not is_loopback(u)})
    assert not leaks, f"the page tried to reach other hosts: {leaks}"
