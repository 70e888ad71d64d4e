"""The app as a user meets it: start to first rendered page (against ``streamlit hello`` in
the same run), and the memory of a process that has answered with the local models."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from rag_core.bench.inputs import ROOT, scratch
from rag_core.bench.servers import free_port
from rag_core.bench.stats import median, ratio


def _first_render(args: list[str], env: dict[str, str], browser: Any, ready: str = "h1") -> tuple[float, float]:
    """Seconds from starting ``streamlit ARGS`` to its page's first heading drawn in a real browser
    (something to see), and to the ``ready`` selector (the page usable: Docent's question box)."""
    port = free_port()
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", *args, "--server.headless", "true", "--server.port", str(port),
         "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        page = browser.new_page()
        deadline = time.perf_counter() + 120
        while True:
            try:
                page.goto(f"http://127.0.0.1:{port}/", timeout=5000)
                break
            except Exception:
                if time.perf_counter() > deadline:
                    raise
                time.sleep(0.05)
        page.locator("h1").first.wait_for(timeout=120_000)
        seconds = time.perf_counter() - started
        page.locator(ready).first.wait_for(timeout=120_000)
        usable = time.perf_counter() - started
        page.close()
        return round(seconds, 2), round(usable, 2)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def bench_cold_start(runs: int = 3) -> dict[str, Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return {"skipped": "playwright is not installed (pip install -r requirements-dev.txt)"}
    if not Path("/usr/bin/chromium").exists():
        return {"skipped": "Debian's chromium is not installed (/usr/bin/chromium)"}
    env = {**os.environ, "DOCENT_DATA_DIR": str(scratch("app"))}
    docent, hello, usable = [], [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path="/usr/bin/chromium",
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"],
        )
        try:
            for _ in range(runs):  # alternating, so both see the same load
                first, ready = _first_render(["run", "app.py"], env, browser, "[data-testid='stChatInput']")
                docent.append(first)
                usable.append(ready)
                hello.append(_first_render(["hello"], env, browser)[0])
        finally:
            browser.close()
    return {
        "cold_start_s": median(docent),
        "hello_s": median(hello),
        "cold_start_vs_hello": ratio(median(docent), median(hello)),
        "ready_s": median(usable),  # the Chat page usable (its question box drawn)
        "ready_vs_hello": ratio(median(usable), median(hello)),
        "runs": {"docent": docent, "docent_ready": usable, "hello": hello},
    }


# VmHWM, not ru_maxrss: a child forked from a big parent inherits the parent's ru_maxrss
# (the bench process holds 100k synthetic chunks by then); VmHWM is this process's own peak.
_RSS_PROBE = """
import json, sys
from rag_core import build_context, load_settings
ctx = build_context(load_settings())
ctx.llm()
turn = ctx.chat.ask(sys.argv[1])
hwm = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"peak_rss_mb": round(int(hwm.split()[1]) / 1024, 1)}))
"""


def bench_peak_rss(data_dir: Path, question: str) -> dict[str, Any]:
    """Peak memory of a process that loaded the local models and answered one question."""
    import json

    env = {**os.environ, "DOCENT_DATA_DIR": str(data_dir)}
    out = subprocess.run(
        [sys.executable, "-c", _RSS_PROBE, question], env=env, cwd=ROOT, capture_output=True, text=True, timeout=900
    )
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1:] or ["failed"]}
    return json.loads(out.stdout.strip().splitlines()[-1])
