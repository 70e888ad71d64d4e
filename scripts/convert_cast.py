#!/usr/bin/env python
"""TREC CAsT 2021/2022 turns → a Docent evaluation set (corpus folder + questions JSONL).

    python scripts/convert_cast.py ../shared/data/eval OUT [--holdout-topics 4]

Reads ``cast/derived_cast2021_2022_turns.jsonl`` (one record per turn: ``history``, raw
``question``, human ``gold_rewrite``, and the 2021 ``gold_passage`` or the 2022
``gold_response``) and writes:

- ``OUT/corpus/``: every gold passage as a ``.txt`` file, one per distinct text, so the
  passages of a topic sit among those of every other topic (the distractors);
- ``OUT/questions.jsonl``: one question per turn with its ``history``, ``gold_rewrite`` and
  ``gold_files`` (the passage's file). Topics alternate between 2021 and 2022, so that
  ``--limit`` takes whole conversations from both years;
- ``OUT/unanswerable.jsonl``: the human rewrites of the last ``--holdout-topics`` topics,
  whose passages are left out of the corpus, marked ``"answerable": false``.

The 2022 topics are trees flattened with duplicates: a turn is kept once per topic.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

from evalset_files import safe_name, write_corpus, write_jsonl

TURNS = Path("cast") / "derived_cast2021_2022_turns.jsonl"


def passage_of(rec: dict) -> tuple[str, str] | None:
    """(file stem, text) of a turn's gold passage, or None when the turn has none."""
    if rec.get("gold_passage"):
        return str(rec.get("gold_passage_id") or _digest(rec["gold_passage"])), rec["gold_passage"]
    if rec.get("gold_response"):
        return f"{rec['source']}_{rec['topic']}_{rec['turn']}", rec["gold_response"]
    return None


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def convert(shared: Path, out: Path, holdout_topics: int = 4) -> dict:
    src = shared / TURNS
    if not src.exists():
        raise SystemExit(f"{src} not found: give the shared eval folder (…/shared/data/eval)")
    records = [json.loads(line) for line in src.read_text(encoding="utf-8").splitlines() if line.strip()]

    topics: dict[tuple[str, int], list[dict]] = {}
    seen: set[tuple] = set()
    for rec in records:
        key = (rec["source"], rec["topic"], str(rec["turn"]))
        if key in seen:
            continue
        seen.add(key)
        topics.setdefault((rec["source"], rec["topic"]), []).append(rec)

    by_year: dict[str, list] = {}
    for key in topics:
        by_year.setdefault(key[0], []).append(key)
    order: list[tuple[str, int]] = []
    years = sorted(by_year)
    for i in range(max(len(v) for v in by_year.values())):
        order.extend(by_year[y][i] for y in years if i < len(by_year[y]))
    held = set(order[len(order) - holdout_topics :]) if holdout_topics else set()

    corpus = out / "corpus"
    texts: dict[str, str] = {}  # file name -> text
    file_of_text: dict[str, str] = {}
    questions, unanswerable = [], []
    for key in order:
        for rec in topics[key]:
            qid = f"{rec['source']}_{rec['topic']}_{rec['turn']}"
            if key in held:
                if rec.get("gold_rewrite"):
                    unanswerable.append(
                        {"id": qid, "question": rec["gold_rewrite"], "history": [], "answerable": False}
                    )
                continue
            found = passage_of(rec)
            if found is None:
                continue
            stem, text = found
            name = file_of_text.get(text)
            if name is None:
                name = f"{safe_name(stem)}.txt"
                if name in texts:
                    name = f"{safe_name(stem)}_{_digest(text)}.txt"
                texts[name] = text.strip() + "\n"
                file_of_text[text] = name
            questions.append(
                {
                    "id": qid,
                    "question": rec["question"],
                    "history": list(rec.get("history") or []),
                    "gold_rewrite": rec.get("gold_rewrite") or rec["question"],
                    "gold_files": [name],
                }
            )
    write_corpus(corpus, texts)
    write_jsonl(out / "questions.jsonl", questions)
    write_jsonl(out / "unanswerable.jsonl", unanswerable)
    return {
        "files": len(file_of_text),
        "questions": len(questions),
        "unanswerable": len(unanswerable),
        "topics": len(order) - len(held),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("shared", type=Path, help="the shared eval folder, e.g. ../shared/data/eval")
    p.add_argument("out", type=Path, help="output folder (corpus/, questions.jsonl, unanswerable.jsonl)")
    p.add_argument("--holdout-topics", type=int, default=4, help="topics left out of the corpus (unanswerable)")
    args = p.parse_args(argv)
    stats = convert(args.shared, args.out, args.holdout_topics)
    print(json.dumps(stats), file=sys.stderr)
    print(f"python -m rag_core eval --corpus {args.out / 'corpus'} --questions {args.out / 'questions.jsonl'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
