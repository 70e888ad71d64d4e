#!/usr/bin/env python
"""SEC 10-Q questions → a Docent evaluation set (the corpus is the shared PDFs).

    python scripts/convert_sec10q.py ../shared/data/eval OUT

Reads ``sec10q/data/v1/qna_data.csv`` (columns Question, Source Docs, Question Type,
Source Chunk Type, Answer; ``Source Docs`` is a glob such as ``*2023 Q3 AAPL*``) and writes:

- ``OUT/questions.jsonl``: each question, single-turn, with ``gold_files`` = the PDFs in
  ``sec10q/data/v1/docs/`` that the glob matches, and the reviewed answer as
  ``reference_answer`` (prose, not a span: not a ``gold_answer`` for ``answer_recall``);
- ``OUT/unanswerable.jsonl``: the questions that name their company, with the company
  swapped for one that has no filing in the corpus (Apple → Tesla, ...), marked
  ``"answerable": false``: "What was Tesla's gross margin?" must not be answered from
  Apple's 10-Q.
- ``OUT/corpus``: a symbolic link to the shared ``docs/`` folder (nothing is copied).

Mojibake in the original CSV (UTF-8 read as cp1252) is repaired where it round-trips.
"""

from __future__ import annotations

import argparse
import csv
import fnmatch
import json
import re
import sys
from pathlib import Path

from evalset_files import write_jsonl

CSV = Path("sec10q") / "data" / "v1" / "qna_data.csv"
DOCS = Path("sec10q") / "data" / "v1" / "docs"

# Companies with no filing in the corpus, by the ticker they replace.
SWAPS = {
    "AAPL": (("Apple", "AAPL"), "Tesla"),
    "AMZN": (("Amazon", "AMZN"), "Netflix"),
    "INTC": (("Intel", "INTC"), "Boeing"),
    "MSFT": (("Microsoft", "MSFT"), "Pfizer"),
    "NVDA": (("NVIDIA", "Nvidia", "NVDA"), "Walmart"),
}


_MOJIBAKE = re.compile("[\u00c2-\u00f4][\u0080-\u00bf\u0152-\u2122]+")


def fix_mojibake(text: str) -> str:
    """Undo UTF-8 bytes decoded as cp1252 ("â€™" → "’") when the round trip is clean."""

    def repair(match: re.Match) -> str:
        try:
            return match.group(0).encode("cp1252").decode("utf-8")
        except (UnicodeEncodeError, UnicodeDecodeError):
            return match.group(0)

    return _MOJIBAKE.sub(repair, text)


def gold_files(glob: str, names: list[str]) -> list[str]:
    patterns = [g.strip() for g in re.split(r"[,;\n]", glob) if g.strip()]
    return [n for n in names if any(fnmatch.fnmatch(n, p) or fnmatch.fnmatch(Path(n).stem, p) for p in patterns)]


def swap_company(question: str, files: list[str]) -> str | None:
    """The question about a company without a filing here, or None if it names no company."""
    tickers = {t for t in SWAPS for f in files if t in f}
    if len(tickers) != 1:
        return None
    names, other = SWAPS[tickers.pop()]
    pattern = re.compile(r"\b(" + "|".join(re.escape(n) for n in names) + r")\b", re.I)
    if not pattern.search(question):
        return None
    return pattern.sub(other, question)


def convert(shared: Path, out: Path) -> dict:
    src, docs = shared / CSV, shared / DOCS
    if not src.exists() or not docs.is_dir():
        raise SystemExit(f"{src} or {docs} not found: give the shared eval folder (…/shared/data/eval)")
    names = sorted(p.name for p in docs.iterdir() if p.suffix.lower() == ".pdf")
    with src.open(encoding="utf-8-sig", newline="") as f:
        rows = list(csv.DictReader(f))
    questions, unanswerable, unmatched = [], [], []
    for i, row in enumerate(rows, 1):
        question = fix_mojibake((row.get("Question") or "").strip())
        files = gold_files(row.get("Source Docs") or "", names)
        if not question:
            continue
        if not files:
            unmatched.append(i)
            continue
        qid = f"sec10q_{i:03d}"
        questions.append(
            {
                "id": qid,
                "question": question,
                "history": [],
                "gold_files": files,
                "reference_answer": fix_mojibake((row.get("Answer") or "").strip()),
                "type": row.get("Question Type", ""),
                "chunk_type": row.get("Source Chunk Type", ""),
            }
        )
        swapped = swap_company(question, files)
        if swapped:
            unanswerable.append({"id": f"{qid}_swap", "question": swapped, "history": [], "answerable": False})
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(out / "questions.jsonl", questions)
    write_jsonl(out / "unanswerable.jsonl", unanswerable)
    link = out / "corpus"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(docs.resolve(), target_is_directory=True)
    return {
        "files": len(names),
        "questions": len(questions),
        "unanswerable": len(unanswerable),
        "unmatched_rows": unmatched,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("shared", type=Path, help="the shared eval folder, e.g. ../shared/data/eval")
    p.add_argument("out", type=Path, help="output folder (questions.jsonl, unanswerable.jsonl, corpus link)")
    args = p.parse_args(argv)
    stats = convert(args.shared, args.out)
    print(json.dumps(stats), file=sys.stderr)
    print(f"python -m rag_core eval --corpus {args.out / 'corpus'} --questions {args.out / 'questions.jsonl'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
