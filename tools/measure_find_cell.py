"""How often ``find_cell`` finds the asked figure by table structure.

Usage: python tools/measure_find_cell.py [--pages gold|files|all|retrieved] QUESTIONS.jsonl [PDF_DIR]

Each question's pages are read from the PDFs as the loader reads them (PDFium, bounded text):
``gold`` the gold pages, ``files`` every page of the gold files, ``all`` every page of every
filing in PDF_DIR, ``retrieved`` the pages of the sources an answer had (QUESTIONS is then an
answers file of the evaluation: each line with ``turn.sources``; the rates are also given over
the questions whose gold page was retrieved). A question is right when each figure of its
gold answer is a found cell (numbers compared as the evaluation compares them), each from a
gold filing; wrong when a cell was found that is not; a question with no cell found is
neither. Prints the rates by question shape and the misses.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag_core.evaluation.answers import figure_matches, gold_figures  # noqa: E402
from rag_core.evaluation.answers import figures as answer_figures  # noqa: E402
from rag_core.figures.cells import Page, find_cells  # noqa: E402
from rag_core.figures.sources import document_entity  # noqa: E402

DEFAULT_PDFS = ROOT.parent / "shared" / "data" / "eval" / "sec10q" / "data" / "v1" / "docs"


def read_pdf(path: Path) -> list[str]:
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(str(path))
    try:
        out = []
        for i in range(len(pdf)):
            textpage = pdf[i].get_textpage()
            out.append(textpage.get_text_bounded().replace("\r\n", "\n").replace("\r", "\n"))
            textpage.close()
        return out
    finally:
        pdf.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("questions")
    ap.add_argument("pdfs", nargs="?", default=str(DEFAULT_PDFS))
    ap.add_argument("--pages", choices=("gold", "files", "all", "retrieved"), default="gold")
    ap.add_argument("--shapes", default=str(ROOT / "tests" / "data" / "sec_shapes.jsonl"), help="question shapes by id")
    args = ap.parse_args()
    texts = {p.name: read_pdf(p) for p in sorted(Path(args.pdfs).glob("*.pdf"))}
    entity = {name: document_entity(pages[0] if pages else "") for name, pages in texts.items()}
    rows = [json.loads(line) for line in Path(args.questions).read_text().splitlines() if line.strip()]
    shapes = {}
    if Path(args.shapes).is_file():
        shapes = {q["id"]: q.get("shape") for q in map(json.loads, Path(args.shapes).read_text().splitlines()) if q}
    by_shape: dict[str, list[bool]] = defaultdict(list)
    errors: dict[str, int] = defaultdict(int)
    retrieved_ok: dict[str, list[bool]] = defaultdict(list)
    misses = []
    for q in rows:
        if not q.get("gold_files") or not q.get("gold_answer"):
            continue
        files = [f for f in q["gold_files"] if f in texts]
        if args.pages == "gold":
            keys = [(f, p) for f in files for p in q.get("gold_pages", []) if 1 <= p <= len(texts[f])]
        elif args.pages == "files":
            keys = [(f, p + 1) for f in files for p in range(len(texts[f]))]
        elif args.pages == "all":
            keys = [(f, p + 1) for f in texts for p in range(len(texts[f]))]
        else:
            sources = (q.get("turn") or {}).get("sources") or []
            keys = list(
                dict.fromkeys((s["file"], s["page"]) for s in sources if s.get("file") in texts and s.get("page"))
            )
        pages = [Page(texts[f][p - 1], f, p, entity[f]) for f, p in keys]
        asked = [
            h[1] if isinstance(h, list) else h
            for h in q.get("history") or []
            if not isinstance(h, list) or h[0] == "user"
        ]
        previous = asked[-1] if asked else ""  # the last question before (the history's first line in the shapes file)
        matches = find_cells(q["question"], pages, previous)
        wanted = gold_figures(q["gold_answer"])
        got = [m for m in matches if m is not None]
        said = [f for m in got for f in answer_figures(f"{m.number.text}")]
        ok = bool(got) and all(any(figure_matches(g, s) for s in said) for g in wanted)
        ok = ok and all(m.page.entity in {entity[f] for f in q["gold_files"] if f in entity} for m in got)
        if len(wanted) > 1 and len(got) != len(wanted):
            ok = False
        shape = q.get("shape") or shapes.get(q.get("id")) or q.get("type") or "all"
        by_shape[shape].append(ok)
        wrong = [m for m in got if not any(figure_matches(g, f) for g in wanted for f in answer_figures(m.number.text))]
        errors[shape] += bool(wrong) or any(m.page.entity not in {entity[f] for f in files} for m in got)
        if args.pages == "retrieved" and all(any((f, p) in keys for p in q.get("gold_pages", [])) for f in files):
            retrieved_ok[shape].append(ok)
        if not ok:
            misses.append(
                (q.get("id"), q["question"], q["gold_answer"], [m.describe() if m else None for m in matches])
            )
    for shape, oks in sorted(by_shape.items()):
        extra = f"; a wrong cell in {errors[shape]}"
        if args.pages == "retrieved":
            r = retrieved_ok[shape]
            extra += f"; gold pages retrieved: {sum(r)} / {len(r)}" + (f" = {sum(r) / len(r):.2f}" if r else "")
        print(f"{shape:32s} {sum(oks):3d} / {len(oks):3d}  = {sum(oks) / len(oks):.2f}{extra}")
    allok = [o for oks in by_shape.values() for o in oks]
    print(f"{'all':32s} {sum(allok):3d} / {len(allok):3d}  = {sum(allok) / max(1, len(allok)):.2f}")
    print("\nmisses:")
    for qid, question, gold, found in misses:
        print(f"- {qid}: {question}\n    gold {gold}\n    found {found}")


if __name__ == "__main__":
    main()
