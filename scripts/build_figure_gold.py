#!/usr/bin/env python
"""SEC 10-Q figure questions with page gold, for the answer mode of ``eval``.

    python scripts/build_figure_gold.py /tmp/evalsets/sec10q   # after convert_sec10q.py

Reads ``questions.jsonl`` (from ``convert_sec10q.py``) and the PDFs of ``corpus/``, and writes
``figures.jsonl``: the questions whose reviewed answer gives a figure, with

- ``gold_answer``: the figures of the first sentence of the reviewed answer that has any
  (at most two; years and one-digit numbers are not figures), joined by "; " — the answer
  mode checks each is in the answer, numbers compared as numbers;
- ``gold_pages``: the pages of the question's one filing whose text holds every gold figure
  (as the filing writes it: "82,959" in a table "in millions" matches "$82,959 million").

A question is kept only when it is unambiguous: one filing, one or two figures, and those
figures together on one to three pages (a figure in both the statement and the MD&A table is
on two pages, and either is a right citation). ``stats.json`` beside it says how many were
kept and why the others were not.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(ROOT / "scripts"))
from evalset_files import write_jsonl  # noqa: E402

from rag_core.evaluation.answers import Figure, figure_matches, figures, gold_figures  # noqa: E402
from rag_core.loaders import load_file  # noqa: E402

MAX_FIGURES = 2
MAX_PAGES = 3


def answer_figures(reference: str) -> list[Figure]:
    """The figures of the first sentence of ``reference`` that has any (at most MAX_FIGURES + 1,
    so that a sentence with too many is recognised and dropped)."""
    body = reference.split("SOURCE", 1)[0]
    for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z])|\n+", body):
        found = gold_figures(sentence)
        if found:
            return found[: MAX_FIGURES + 1]
    return []


def pages_with(all_figures: list[Figure], pages: dict[int, str]) -> list[int]:
    """Pages whose text holds every one of ``all_figures``."""
    out = []
    for number, text in pages.items():
        on_page = figures(text)
        if all(any(figure_matches(g, c) for c in on_page) for g in all_figures):
            out.append(number)
    return out


def build(questions: list[dict], corpus: Path) -> tuple[list[dict], dict[str, int]]:
    cache: dict[str, dict[int, str]] = {}
    kept: list[dict] = []
    why: dict[str, int] = {"several filings": 0, "no figure": 0, "too many figures": 0, "figure on no page": 0}
    why["figure on too many pages"] = 0
    for q in questions:
        files = q.get("gold_files") or []
        if len(files) != 1:
            why["several filings"] += 1
            continue
        found = answer_figures(q.get("reference_answer") or "")
        if not found:
            why["no figure"] += 1
            continue
        if len(found) > MAX_FIGURES:
            why["too many figures"] += 1
            continue
        name = files[0]
        if name not in cache:
            loaded = load_file(corpus / name, name, "figure-gold")
            cache[name] = {int(d.metadata["page"]): d.text for d in loaded.documents}
        pages = pages_with(found, cache[name])
        if not pages:
            why["figure on no page"] += 1
            continue
        if len(pages) > MAX_PAGES:
            why["figure on too many pages"] += 1
            continue
        kept.append(
            {
                "id": q["id"],
                "question": q["question"],
                "gold_files": files,
                "gold_pages": pages,
                "gold_answer": "; ".join(f.text.strip() for f in found),
                "type": q.get("type"),
            }
        )
    why["kept"] = len(kept)
    return kept, why


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path, help="the folder convert_sec10q.py wrote (questions.jsonl, corpus/)")
    args = ap.parse_args(argv)
    questions = [json.loads(line) for line in (args.folder / "questions.jsonl").read_text().splitlines() if line]
    kept, why = build(questions, args.folder / "corpus")
    write_jsonl(args.folder / "figures.jsonl", kept)
    (args.folder / "figures-stats.json").write_text(json.dumps(why, indent=2))
    print(json.dumps(why))
    return 0


if __name__ == "__main__":
    sys.exit(main())
