"""One app process of ``bench --team``: several people, each a thread in their own session,
asking through the same services the Chat page calls (``ctx.for_person(who).chat.turn``).

A Streamlit process runs each visitor's page in a thread of one Python process; this does
the same without drawing the page, so the figures are Docent's (the database, Chroma, the
model server, the GIL shared by the people of one process), not the browser's.

    python -m rag_core.bench.team_worker PEOPLE.json

``PEOPLE.json``: ``[{"person": "p01@bench.example.org", "questions": [q1, f1, f2]}, ...]``.
Prints ``{"ready": ...}`` once its people have their sessions, then reads a wall-clock time
from stdin at which every person starts (so both processes start together); prints one JSON
line per turn, then ``{"done": true}``.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

from rag_core.context import AppContext, build_context
from rag_core.settings import load_settings

_print_lock = threading.Lock()


def emit(row: dict[str, Any]) -> None:
    with _print_lock:
        print(json.dumps(row, ensure_ascii=False), flush=True)


def person_asks(mine: AppContext, session: str, questions: list[str], start_at: float) -> None:
    """One person in their session: a question and its follow-ups, one after another (each
    when the previous answer has ended, as a reader would)."""
    time.sleep(max(0.0, start_at - time.time()))
    for n, question in enumerate(questions):
        row: dict[str, Any] = {"person": mine.person, "session": session, "turn": n, "question": question}
        asked = time.perf_counter()
        try:
            turn = mine.chat.turn(question, session)
            row["sources_s"] = round(time.perf_counter() - asked, 3)
            row["sources"] = len(turn.sources)
            for _ in turn:
                if "first_token_s" not in row:
                    row["first_token_s"] = round(time.perf_counter() - asked, 3)
            row["total_s"] = round(time.perf_counter() - asked, 3)
            row["stored"] = turn.stored is not None
        except Exception as e:  # a load test counts errors; it never stops at the first
            row["error"] = f"{type(e).__name__}: {e}"[:500]
        emit(row)


def main(argv: list[str]) -> int:
    with open(argv[0], encoding="utf-8") as f:
        people = json.load(f)
    ctx = build_context(load_settings())
    ctx.llm()  # the OpenAI-compatible client: nothing to load, but built before the clock starts
    views = [ctx.for_person(p["person"]) for p in people]
    sessions = [mine.sessions.create(f"bench {mine.person}").id for mine in views]
    emit({"ready": True, "people": len(people), "sessions": dict(zip([p["person"] for p in people], sessions))})
    start_at = float(sys.stdin.readline())
    threads = [
        threading.Thread(target=person_asks, args=(mine, sid, p["questions"], start_at), daemon=True)
        for mine, sid, p in zip(views, sessions, people)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    emit({"done": True})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
