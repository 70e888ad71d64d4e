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
  in the corpus (same domain, different articles), marked ``"answerable": false``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

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


def _safe(stem: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in stem)


def convert(shared: Path, out: Path, holdout: int = 48, source: Path = DEV) -> dict:
    src = shared / source
    if not src.exists():
        raise SystemExit(f"{src} not found: give the shared eval folder (…/shared/data/eval)")
    paras = list(paragraphs(json.loads(src.read_text(encoding="utf-8"))))
    kept, held = (paras[: len(paras) - holdout], paras[len(paras) - holdout :]) if holdout else (paras, [])
    corpus = out / "corpus"
    shutil.rmtree(corpus, ignore_errors=True)
    corpus.mkdir(parents=True)
    for pid, title, context, _ in kept:
        (corpus / f"{_safe(pid)}.txt").write_text(f"{title}\n\n{context.strip()}\n", encoding="utf-8")

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
                    row["gold_files"] = [f"{_safe(pid)}.txt"]
                    answers = [a["text"] for a in qa.get("answers", []) if a.get("text")]
                    if answers:
                        row["gold_answer"] = answers[0]
                else:
                    row["answerable"] = False
                rows.append(row)
        return rows

    questions, unanswerable = round_robin(kept, True), round_robin(held, False)
    _write_jsonl(out / "questions.jsonl", questions)
    _write_jsonl(out / "unanswerable.jsonl", unanswerable)
    return {"files": len(kept), "questions": len(questions), "unanswerable": len(unanswerable)}


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


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
