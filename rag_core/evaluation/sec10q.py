"""The SEC 10-Q questions of the shared eval folder as a Docent evaluation set, and the figure
questions with page gold (``python -m rag_core eval-set sec10q``; docs/evaluation.md).

``convert_sec10q`` reads ``sec10q/data/v1/qna_data.csv`` (Question, Source Docs, Question Type,
Source Chunk Type, Answer; ``Source Docs`` is a glob such as ``*2023 Q3 AAPL*``) and writes
``questions.jsonl`` (``gold_files``: the PDFs the glob matches; the reviewed answer as
``reference_answer``: prose, not a span), ``unanswerable.jsonl`` (each question naming its
company with the company swapped for one without a filing here: "What was Tesla's gross
margin?" must not be answered from Apple's 10-Q) and ``corpus``, a link to the shared PDFs.
Mojibake in the CSV (UTF-8 read as cp1252) is repaired where it round-trips.

``figure_questions`` keeps the questions whose reviewed answer gives a figure, with
``gold_answer`` (the figures of the answer's first sentence that has any, at most two) and
``gold_pages`` (the pages of the question's one filing holding every gold figure, as the filing
writes it: "82,959" in a table in millions matches "$82,959 million"). A question is kept only
when it is unambiguous: one filing, one or two figures, on one to three pages.
"""

from __future__ import annotations

import csv
import fnmatch
import json
import re
from pathlib import Path
from typing import Any

from rag_core.evaluation.answers import Figure, figure_matches, figures, gold_figures
from rag_core.evaluation.sets import read_source, write_jsonl
from rag_core.loaders import load_file

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
MAX_FIGURES = 2
MAX_PAGES = 3

_MOJIBAKE = re.compile("[\u00c2-\u00f4][\u0080-\u00bf\u0152-\u2122]+")


def fix_mojibake(text: str) -> str:
    """Undo UTF-8 bytes decoded as cp1252 ("â€™" → "’") when the round trip is clean."""

    def repair(match: re.Match[str]) -> str:
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


def convert_sec10q(shared: Path, out: Path) -> dict[str, Any]:
    src, docs = read_source(shared, CSV), read_source(shared, DOCS)
    names = sorted(p.name for p in docs.iterdir() if p.suffix.lower() == ".pdf")
    with src.open(encoding="utf-8-sig", newline="") as f:
        rows = list(csv.DictReader(f))
    questions: list[dict[str, Any]] = []
    unanswerable: list[dict[str, Any]] = []
    unmatched: list[int] = []
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


# --------------------------------------------------------------------------- figure questions


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


def figure_questions(questions: list[dict[str, Any]], corpus: Path) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The unambiguous figure questions with their page gold, and how many were dropped why."""
    cache: dict[str, dict[int, str]] = {}
    kept: list[dict[str, Any]] = []
    why = dict.fromkeys(
        ("several filings", "no figure", "too many figures", "figure on no page", "figure on too many pages"), 0
    )
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


def write_figure_questions(folder: Path) -> dict[str, int]:
    """``figures.jsonl`` and ``figures-stats.json`` beside the ``questions.jsonl`` and ``corpus``
    that ``convert_sec10q`` wrote into ``folder``."""
    lines = (folder / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    kept, why = figure_questions([json.loads(line) for line in lines if line.strip()], folder / "corpus")
    write_jsonl(folder / "figures.jsonl", kept)
    (folder / "figures-stats.json").write_text(json.dumps(why, indent=2), encoding="utf-8")
    return why
