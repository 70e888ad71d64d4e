#!/usr/bin/env python
"""CMRC 2018 (Simplified Chinese, SQuAD format) → a Docent evaluation set.

    python scripts/convert_cmrc.py ../shared/data/eval OUT [--holdout 48]

Reads ``cmrc2018/cmrc2018_dev.json`` and writes:

- ``OUT/corpus/``: each paragraph as ``<paragraph id>.txt`` (the article title on the first
  line, then the paragraph), except the last ``--holdout`` paragraphs;
- ``OUT/questions.jsonl``: single-turn questions with ``gold_files`` = the paragraph's file
  and ``gold_answer`` = the first reference answer (a span). Ordered round-robin over
  paragraphs (every paragraph's first question, then every second one, ...), so that
  ``--limit`` samples many paragraphs;
- ``OUT/unanswerable.jsonl``: the questions of the held-out paragraphs, whose text is not
  in the corpus (same domain, different articles), marked ``"answerable": false``;
- ``OUT/followups.jsonl``: Chinese follow-ups, made by rule: a paragraph's first question
  and its answer become the history, and a later question of the same paragraph that
  names the article's title gets the title replaced by 它 ("it"); the original question
  is the ``gold_rewrite``. Tests condensing in Chinese, where no conversational set exists;
- ``OUT/standalone.jsonl``: self-contained questions after a turn about another article
  (the previous paragraph's first question and answer): the rewrite should leave them
  unchanged (``gold_rewrite`` = the question).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

from evalset_files import safe_name, write_corpus, write_jsonl

DEV = Path("cmrc2018") / "cmrc2018_dev.json"


def paragraphs(data: dict):
    """(paragraph id, title, context, qas) for every paragraph, in file order."""
    for article in data.get("data", []):
        for para in article.get("paragraphs", []):
            yield (
                str(para.get("id") or article.get("id")),
                article.get("title", ""),
                para["context"],
                para.get("qas", []),
            )


def convert(shared: Path, out: Path, holdout: int = 48, source: Path = DEV) -> dict:
    src = shared / source
    if not src.exists():
        raise SystemExit(f"{src} not found: give the shared eval folder (…/shared/data/eval)")
    paras = list(paragraphs(json.loads(src.read_text(encoding="utf-8"))))
    kept, held = (paras[: len(paras) - holdout], paras[len(paras) - holdout :]) if holdout else (paras, [])
    corpus = out / "corpus"
    write_corpus(
        corpus, {f"{safe_name(pid)}.txt": f"{title}\n\n{context.strip()}\n" for pid, title, context, _ in kept}
    )

    def round_robin(group, answerable: bool) -> list[dict]:
        rows: list[dict] = []
        depth = max((len(qas) for *_, qas in group), default=0)
        for j in range(depth):
            for pid, _, _, qas in group:
                if j >= len(qas):
                    continue
                qa = qas[j]
                row = {"id": qa.get("id") or f"{pid}_{j}", "question": qa["question"].strip(), "history": []}
                if answerable:
                    row["gold_files"] = [f"{safe_name(pid)}.txt"]
                    answers = [a["text"] for a in qa.get("answers", []) if a.get("text")]
                    if answers:
                        row["gold_answer"] = answers[0]
                else:
                    row["answerable"] = False
                rows.append(row)
        return rows

    questions, unanswerable = round_robin(kept, True), round_robin(held, False)
    followups = make_followups(kept)
    standalone = make_standalone(kept)
    write_jsonl(out / "questions.jsonl", questions)
    write_jsonl(out / "unanswerable.jsonl", unanswerable)
    write_jsonl(out / "followups.jsonl", followups)
    write_jsonl(out / "standalone.jsonl", standalone)
    return {
        "files": len(kept),
        "questions": len(questions),
        "unanswerable": len(unanswerable),
        "followups": len(followups),
        "standalone": len(standalone),
    }


def make_followups(group) -> list[dict]:
    """Second turns whose subject (the article title) is only in the first turn."""
    rows = []
    for pid, title, _, qas in group:
        title = (title or "").strip()
        if len(qas) < 2 or len(title) < 2 or title not in qas[0]["question"]:
            continue
        first = qas[0]
        answers = [a["text"] for a in first.get("answers", []) if a.get("text")]
        for qa in qas[1:]:
            q = qa["question"].strip()
            if title in q and q.count(title) == 1:
                rows.append(
                    {
                        "id": f"{qa.get('id') or pid}_followup",
                        "question": q.replace(title, "它").replace("《它》", "它"),
                        "history": [first["question"].strip(), answers[0] if answers else ""],
                        "gold_rewrite": q,
                        "gold_files": [f"{safe_name(pid)}.txt"],
                    }
                )
                break
    return rows


def make_standalone(group) -> list[dict]:
    """Each paragraph's first question, asked after a turn about the previous paragraph."""
    rows = []
    for (_, _, _, prev_qas), (pid, _, _, qas) in itertools.pairwise(group):
        if not prev_qas or not qas:
            continue
        prev = prev_qas[0]
        answers = [a["text"] for a in prev.get("answers", []) if a.get("text")]
        q = qas[0]["question"].strip()
        rows.append(
            {
                "id": f"{qas[0].get('id') or pid}_standalone",
                "question": q,
                "history": [prev["question"].strip(), answers[0] if answers else ""],
                "gold_rewrite": q,
                "gold_files": [f"{safe_name(pid)}.txt"],
            }
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("shared", type=Path, help="the shared eval folder, e.g. ../shared/data/eval")
    p.add_argument("out", type=Path, help="output folder (corpus/, questions.jsonl, unanswerable.jsonl)")
    p.add_argument("--holdout", type=int, default=48, help="paragraphs left out of the corpus (unanswerable)")
    args = p.parse_args(argv)
    stats = convert(args.shared, args.out, args.holdout)
    print(json.dumps(stats), file=sys.stderr)
    print(f"python -m rag_core eval --corpus {args.out / 'corpus'} --questions {args.out / 'questions.jsonl'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
