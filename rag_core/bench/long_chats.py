"""A long chat and a long list of chats (issue 42, item 4): how long the Chat page takes to
open on a 10,000-message chat with 5,000 chats in the sidebar, to search the chats, to keep
a question typed, and to answer it; in a real browser too, when Debian's chromium is here.

    python -m rag_core.bench.long_chats [--messages 10000] [--chats 5000] [--runs 3] [--json]

The figures are the medians of ``--runs`` (extractive answers, hashed embeddings: what is
timed is the page, not a model). Target: each page opens within 3 s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from rag_core.bench.inputs import ROOT, scratch
from rag_core.bench.servers import free_port

QUESTION = "Where did the Orion project launch?"


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


ORION = b"# Orion\n\nThe Orion project launched in 2019 in Lisbon. Its budget was 4 million euros.\n"


def seed(data_dir: Path, messages: int, chats: int) -> tuple[str, str]:
    """A data folder with one document, ``chats`` chats, one of two messages and one of
    ``messages`` messages (the most recent); the long chat's id and the short one's."""
    from rag_core import Message, build_context, load_settings

    ctx = build_context(load_settings())
    ctx.ingestion.ingest_bytes(ORION, "orion.md")
    now = time.time()
    with ctx.db.connect() as c:
        for i in range(chats - 1):
            c.execute(
                "INSERT INTO sessions (id, name, created, updated, doc_filter, owner) VALUES (?, ?, ?, ?, NULL, '')",
                (f"chat{i:05d}", f"Chat number {i}", now - 10 - i, now - 10 - i),
            )
    short = ctx.sessions.add_whole("A short chat", [Message("user", "Hello?"), Message("assistant", "A short answer.")])
    turns: list[Message] = []
    for i in range(messages // 2):
        turns += [Message("user", f"Question number {i}?"), Message("assistant", f"Answer number {i}. " * 20)]
    return ctx.sessions.add_whole("A long chat", turns).id, short.id


def _timed(step: Any) -> float:
    started = time.perf_counter()
    step()
    return time.perf_counter() - started


def bench_page(session_id: str, runs: int) -> dict[str, Any]:
    """Server side (Streamlit's AppTest): a first visit, a search of the chats, a question
    kept (its ``on_submit``, before the page), and the question answered and drawn."""
    from streamlit.testing.v1 import AppTest

    from rag_core import build_context, load_settings

    opened, searched, answered, kept = [], [], [], []
    for _ in range(runs):
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
        at.query_params["session"] = session_id
        opened.append(_timed(at.run))
        box = at.sidebar.text_input(key="chat_search")
        searched.append(_timed(lambda box=box: box.input("number 4321").run()))
        ctx = build_context(load_settings())
        started = time.perf_counter()
        keep = ctx.sessions.pending.keep(session_id, QUESTION)
        kept.append((time.perf_counter() - started) * 1000)
        ctx.sessions.pending.drop(keep.id)
        answered.append(_timed(lambda at=at: at.chat_input[0].set_value(QUESTION).run()))
        if at.exception:
            return {"error": str(at.exception[0].value)}
    return {
        "open_s": round(median(opened), 3),
        "search_s": round(median(searched), 3),
        "question_kept_ms": round(median(kept), 2),
        "ask_and_draw_s": round(median(answered), 3),
        "runs": {"open_s": [round(x, 3) for x in opened], "ask_and_draw_s": [round(x, 3) for x in answered]},
    }


def bench_browser(data_dir: Path, session_id: str, short_id: str, runs: int) -> dict[str, Any]:
    """In Chromium: from opening the chat's address to its last answer, the question box and
    the sidebar drawn, on a server already started (a visitor's open, not the server's start);
    the same for a chat of two messages, on the same server, alternating."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return {"skipped": "playwright is not installed"}
    if not Path("/usr/bin/chromium").exists():
        return {"skipped": "Debian's chromium is not installed (/usr/bin/chromium)"}
    port = free_port()
    env = {**os.environ, "DOCENT_DATA_DIR": str(data_dir)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.port", str(port),
         "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    opened: dict[str, list[float]] = {"long": [], "short": []}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"])
            for attempt in range(runs + 1):  # the first one warms the server (imports, the cached context)
                for kind, sid, last in (
                    ("long", session_id, "Answer number 4999."),
                    ("short", short_id, "A short answer."),
                ):
                    seconds = _open(browser, f"http://127.0.0.1:{port}/?session={sid}", last)
                    if attempt:
                        opened[kind].append(seconds)
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    long, short = median(opened["long"]), median(opened["short"])
    return {
        "open_in_browser_s": round(long, 2),
        "open_short_chat_in_browser_s": round(short, 2),
        "long_vs_short": round(long / short, 2),
        "runs": {k: [round(x, 2) for x in v] for k, v in opened.items()},
    }


def _open(browser: Any, url: str, last: str) -> float:
    page = browser.new_page()
    started = time.perf_counter()
    deadline = started + 180
    while True:
        try:
            page.goto(url, timeout=5000)
            break
        except Exception:
            if time.perf_counter() > deadline:
                raise
            time.sleep(0.1)
    page.get_by_text(last).first.wait_for(timeout=180_000)
    page.locator("[data-testid='stChatInput']").first.wait_for(timeout=180_000)
    page.locator("[data-testid='stSidebar']").get_by_text("Chat number 0", exact=True).wait_for(timeout=180_000)
    seconds = time.perf_counter() - started
    page.close()
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag_core.bench.long_chats", description=__doc__)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--chats", type=int, default=5_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    data_dir = scratch("long-chats")
    for name in [n for n in os.environ if n.startswith("DOCENT_")]:
        del os.environ[name]
    os.environ.update(DOCENT_DATA_DIR=str(data_dir), DOCENT_LLM_PROVIDER="extractive", DOCENT_EMBED_PROVIDER="hash")
    session_id, short_id = seed(data_dir, args.messages, args.chats)
    result = {
        "messages": args.messages,
        "chats": args.chats,
        "page": bench_page(session_id, args.runs),
        "browser": bench_browser(data_dir, session_id, short_id, args.runs),
    }
    if args.json:
        print(json.dumps(result))
    else:
        page, browser = result["page"], result["browser"]
        print(f"{args.messages:,} messages in the chat, {args.chats:,} chats")
        for key, value in {**page, **browser}.items():
            if key != "runs":
                print(f"  {key}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
