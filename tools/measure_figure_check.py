"""How well the figure check tells wrong answers from right ones, on real answers.

Usage: python tools/measure_figure_check.py ANSWERS.jsonl [ANSWERS2.jsonl ...]
           [--docs PDF_DIR] [--cited-only] [--show N] [--path]

Each line of ANSWERS.jsonl is one answer as the evaluation recorded it: ``question``,
``gold_answer``, ``turn`` (``answer``, ``sources`` [{file, page, text}]) and ``score``
(``correct``, ``refused``). The sources are checked as the answer path would pass them:
numbered as the answer cites them, each with its document's entity (the company its first
page names, read from PDF_DIR when the file is there; else the file name alone).

``--path`` checks each answer as the answer path does (``chat.checking.TurnFigures``): the
cells the question asks for found on the whole pages of its sources (read from PDF_DIR), those
the answer does not state marking its figure of that line item.

Prints, over the answers with a figure to check: of the wrong answers, the share the check
marks (at least one figure unsupported; target >= 0.8); of the right answers, the share it
marks (target <= 0.05); then each miss: a wrong answer left unmarked, a right answer marked.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag_core.entities import question_names  # noqa: E402
from rag_core.figures import Passage, check_answer, document_entity, mark_answer, summary  # noqa: E402
from rag_core.figures.check import CheckReport  # noqa: E402

DEFAULT_DOCS = ROOT.parent / "shared" / "data" / "eval" / "sec10q" / "data" / "v1" / "docs"


def first_page(path: Path) -> str:
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(str(path))
    try:
        textpage = pdf[0].get_textpage()
        try:
            return textpage.get_text_bounded()
        finally:
            textpage.close()
    finally:
        pdf.close()


def page_text(path: Path, page: int) -> str:
    """A page's text as the loader reads it (PDFium, bounded text, cleaned)."""
    import pypdfium2 as pdfium

    from rag_core.loaders.pdf import _clean_pdf_text

    pdf = pdfium.PdfDocument(str(path))
    try:
        textpage = pdf[page - 1].get_textpage()
        try:
            return _clean_pdf_text(textpage.get_text_bounded())
        finally:
            textpage.close()
    finally:
        pdf.close()


def with_context(text: str, path: Path, page: int | None) -> str:
    """``text`` (a chunk) with its page's title and table header lines in front, as the
    ingestion stores them in the chunk's ``context`` (``transforms.chunk_context``)."""
    from rag_core.ingestion.transforms import chunk_context

    if page is None or not path.is_file():
        return text
    full = page_text(path, page)
    at = full.find(text[:80])
    if at < 0:
        return text
    lines = [line.strip() for line in full[:at].splitlines() if line.strip()]
    context = chunk_context(lines, set(text.splitlines()))
    return "\n".join(context.split(" | ")) + "\n" + text if context else text


def on_the_path(answer: str, question: str, sources: list[dict], docs: Path) -> CheckReport:
    """``answer`` checked by ``TurnFigures`` over its sources as the index holds them: each a
    chunk with its page's header context, each page whole from its file."""
    from llama_index.core.schema import NodeWithScore, TextNode

    from rag_core.chat.checking import TurnFigures

    nodes, pages = [], {}
    for s in sources:
        name, page, text = s.get("file") or "", s.get("page"), s.get("text") or ""
        path = docs / name
        meta: dict = {"file_name": name, "page": page}
        if page is not None and path.is_file():
            whole = page_text(path, page)
            pages[(name, page)] = [TextNode(text=whole, start_char_idx=0)]
            with_ctx = with_context(text, path, page)
            if with_ctx != text:
                meta["context"] = " | ".join(with_ctx[: len(with_ctx) - len(text)].strip().splitlines())
        nodes.append(NodeWithScore(node=TextNode(text=text, metadata=meta), score=1.0))
        if path.is_file() and (name, 1) not in pages and path.suffix.lower() == ".pdf":
            pages[(name, 1)] = [TextNode(text=first_page(path), start_char_idx=0)]
    figures = TurnFigures(question, nodes, lambda key: pages.get(key, []))
    return figures.check(answer).report


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("answers", nargs="+")
    ap.add_argument("--docs", default=str(DEFAULT_DOCS))
    ap.add_argument("--cited-only", action="store_true", help="only the passages the answer cites support a figure")
    ap.add_argument("--show", type=int, default=40, help="misses to print")
    ap.add_argument(
        "--context",
        choices=("chunk", "none"),
        default="chunk",
        help="give each passage its page's header context as the answering model reads it (chunk), or not",
    )
    ap.add_argument(
        "--path", action="store_true", help="as the answer path checks: with the cells of the sources' pages"
    )
    args = ap.parse_args()
    docs = Path(args.docs)
    entities: dict[str, str] = {}

    def entity(name: str) -> str:
        if name not in entities:
            path = docs / name
            entities[name] = (
                document_entity(first_page(path)) if path.suffix.lower() == ".pdf" and path.is_file() else ""
            )
        return entities[name]

    rows = []
    for file in args.answers:
        rows += [json.loads(line) for line in Path(file).read_text().splitlines() if line.strip()]
    right, wrong, skipped = [], [], 0
    for row in rows:
        turn, score = row.get("turn") or {}, row.get("score") or {}
        answer = turn.get("answer") or ""
        if not answer or score.get("refused") or score.get("refused_answer") or row.get("answerable") is False:
            skipped += 1
            continue
        passages = []
        for i, s in enumerate(turn.get("sources") or []):
            text, name = s.get("text") or "", s.get("file") or ""
            if args.context == "chunk":
                text = with_context(text, docs / name, s.get("page"))
            passages.append(Passage(i + 1, text, name, s.get("page"), entity(name)))
        if args.path:
            question = turn.get("condensed_question") or row.get("question") or ""
            report = on_the_path(answer, question, turn.get("sources") or [], docs)
        else:
            question = row.get("question") or ""
            owners = [name.text for name in question_names(question) if name.owner]  # as ``TurnFigures`` passes them
            report = check_answer(answer, question, passages, cited_only=args.cited_only, owners=owners)
        if not report.figures_checked:
            skipped += 1
            continue
        (right if score.get("correct") else wrong).append((row, report))
    marked_wrong = [x for x in wrong if x[1].figures_unsupported]
    marked_right = [x for x in right if x[1].figures_unsupported]
    print(
        f"answers: {len(rows)}; with figures checked: {len(right) + len(wrong)} ({skipped} refused or without figures)"
    )
    if wrong:
        print(
            f"wrong answers marked: {len(marked_wrong)} / {len(wrong)} = {len(marked_wrong) / len(wrong):.2f}  (target >= 0.8)"
        )
    if right:
        print(
            f"right answers marked: {len(marked_right)} / {len(right)} = {len(marked_right) / len(right):.2f}  (target <= 0.05)"
        )
    statuses: dict[str, int] = {}
    for _, report in right + wrong:
        for f in report.figures:
            statuses[f.status] = statuses.get(f.status, 0) + 1
    print("figure statuses:", ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())))
    misses = [("wrong, not marked", x) for x in wrong if not x[1].figures_unsupported]
    misses += [("right, marked", x) for x in marked_right]
    print(f"\n{'miss':18s} | id | question | gold | checked figures")
    for kind, (row, report) in misses[: args.show]:
        figs = "; ".join(f"{f.text} {f.status}: {f.explanation}" for f in report.figures)
        print(f"{kind:18s} | {row.get('id')} | {row.get('question')} | {row.get('gold_answer')} | {figs}")
    if args.show:
        print("\nmarked answers (first 5 wrong):")
        for row, report in marked_wrong[:5]:
            print(f"- {row.get('id')}: {mark_answer(row['turn']['answer'], report)}\n  [{summary(report)}]")


if __name__ == "__main__":
    main()
