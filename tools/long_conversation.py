#!/usr/bin/env python
"""A 30-turn conversation over the SEC 10-Q filings, then a question about turn 2.

    python tools/long_conversation.py DATA_DIR [--turns 30] [--json]

``DATA_DIR`` is a Docent data folder holding the filings (``python -m rag_core ingest`` them,
or point at an ``eval`` cache folder: ``<data dir>/eval-cache/<key>``). A new session asks, in
order: Apple's net income for the quarter ended June 25, 2022 (turn 2, after a first question
about its net sales), then other figure questions (``tests/data/sec_shapes.jsonl`` and
``tests/data/elliptical_sec.jsonl``) until the history has long passed the memory limit, and
last "What net income did you give me for Apple earlier in this conversation?". Only the
session's memory holds which quarter "earlier" was: the documents hold Apple's net income for
four quarters. Prints whether the last answer repeats the figure turn 2 gave (the memory) and
whether that is the filing's figure (the model), what the session's summary says, and the
prompt the model read (tokens). Run it with a low ``DOCENT_MEMORY_TOKEN_LIMIT`` (600) so that
turn 2 is folded into the summary long before the end.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

FIRST = "What were Apple's total net sales for the quarter ended June 25, 2022?"
SECOND = "What was Apple's net income for the quarter ended June 25, 2022?"
SECOND_FIGURE = "$19,442 million"  # the filing's figure, read off 2022 Q3 AAPL.pdf
LAST = "What net income did you give me for Apple earlier in this conversation?"
_MONEY = re.compile(r"\$\s?\d[\d,]*(?:\.\d+)?(?:\s(?:million|billion))?")


def fillers(n: int) -> list[str]:
    """``n`` figure questions about other companies and periods, from the sets in tests/data."""
    rows = [json.loads(line) for line in (ROOT / "tests/data/sec_shapes.jsonl").read_text().splitlines() if line]
    ellipses = [
        json.loads(line) for line in (ROOT / "tests/data/elliptical_sec.jsonl").read_text().splitlines() if line
    ]
    asked = [r["question"] for r in rows if r.get("shape") == "period"] + [r["history"][0] for r in ellipses]
    picked = [q for q in dict.fromkeys(asked) if "Apple" not in q]
    return picked[:n]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data_dir")
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    from rag_core import build_context, load_settings
    from rag_core.evaluation.answers import answer_correct

    ctx = build_context(load_settings(data_dir=Path(args.data_dir)))
    session = ctx.sessions.create("30 turns").id
    questions = [FIRST, SECOND, *fillers(args.turns - 3), LAST]
    turns = []
    turn_2_answer_id = 0
    for n, question in enumerate(questions, 1):
        asked = ctx.chat.turn(question, session)
        turn = asked.result()
        if n == 2 and asked.stored is not None:
            turn_2_answer_id = asked.stored.id or 0
        turns.append({"turn": n, "question": question, "answer": turn.answer, "timings": turn.timings})
        print(f"[{n}/{len(questions)}] {question}\n    {turn.answer[:160]}", file=sys.stderr, flush=True)
    summaries = ctx.sessions.summaries(session)
    given = "; ".join(_MONEY.findall(turns[1]["answer"]))  # the figure(s) turn 2 gave
    result = {
        "turns": len(questions),
        "second_turn_answer": turns[1]["answer"],
        "second_turn_right": answer_correct(turns[1]["answer"], SECOND_FIGURE),
        "last_answer": turns[-1]["answer"],
        "last_repeats_turn_2": bool(given) and answer_correct(turns[-1]["answer"], given),
        "last_right": answer_correct(turns[-1]["answer"], SECOND_FIGURE),
        "turn_2_folded_into_summary": bool(summaries) and summaries[-1].upto_message_id >= turn_2_answer_id,
        "summaries_written": len(summaries),
        "summary": summaries[-1].text if summaries else None,
        "last_prompt_tokens": turns[-1]["timings"].get("prompt_tokens"),
    }
    print(json.dumps(result, ensure_ascii=False) if args.json else json.dumps(result, indent=2, ensure_ascii=False))
    return 0 if result["last_repeats_turn_2"] else 1


if __name__ == "__main__":
    sys.exit(main())
