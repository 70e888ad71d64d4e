"""A 2,000-page PDF, built and ingested as the app does: time, peak memory, progress, cancel,
and a question answered from page ~1,900 (figures in docs/robustness.md).

The PDF joins the shared corpus's long PDFs and the SEC 10-Q filings with PDFium (pypdf
refuses so many objects), in that order, so the last ~1,000 pages are filings with figures a
question can name. Ingestion runs in this process through ``IngestionService.ingest_file``
with a progress callback and a cancel flag, as the Upload page calls it; the parse worker is
a child process, so the peak memory is sampled over this process and its children.

    python tools/big_pdf.py                       # build /tmp/big2000.pdf, cancel run, full run, retrieval
    python tools/big_pdf.py --show-page 1900      # print what page 1,900 says (to write a question)
    python tools/big_pdf.py --answer              # also answer with the configured model (slow on CPU)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SHARED = ROOT.parent / "shared" / "data"  # ../shared beside the checkout (its README)
SOURCES = [
    *sorted((SHARED / "corpus/pdfs/large_page_count").glob("*.pdf")),
    *sorted((SHARED / "eval/sec10q/data/v1/docs").glob("*.pdf")),
]
QUESTION = "What was Microsoft's total revenue for the three months ended December 31, 2022?"


def build(out: Path, pages: int) -> list[tuple[int, str, int]]:
    """Join the sources until ``pages`` pages (repeating them if needed); the map of
    (first page in the result, source, its page count)."""
    import pypdfium2 as pdfium

    big = pdfium.PdfDocument.new()
    spans: list[tuple[int, str, int]] = []
    while len(big) < pages:
        for src in SOURCES:
            if len(big) >= pages:
                break
            doc = pdfium.PdfDocument(str(src))
            take = min(len(doc), pages - len(big))
            spans.append((len(big) + 1, src.name, take))
            big.import_pages(doc, list(range(take)))
            doc.close()
    big.save(str(out))
    big.close()
    return spans


def page_text(pdf: Path, page: int) -> str:
    import pypdfium2 as pdfium

    doc = pdfium.PdfDocument(str(pdf))
    try:
        return doc[page - 1].get_textpage().get_text_range()
    finally:
        doc.close()


class PeakMemory:
    """The largest resident set of this process plus its children, sampled every 0.2 s."""

    def __init__(self) -> None:
        self.peak_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            self.peak_mb = max(self.peak_mb, _tree_rss_mb(os.getpid()))


def _tree_rss_mb(pid: int) -> float:
    total = 0.0
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/status") as f:
                total += next((int(x.split()[1]) for x in f if x.startswith("VmRSS:")), 0) / 1024
            with open(f"/proc/{p}/task/{p}/children") as f:
                todo += [int(c) for c in f.read().split()]
        except (OSError, ValueError):
            pass
    return total


def context(data: Path, embed: str | None = None):
    from rag_core import build_context
    from rag_core.settings import load_settings

    shutil.rmtree(data, ignore_errors=True)
    given = {"embed_provider": embed} if embed else {}
    return build_context(load_settings(data_dir=data, ocr=False, **given))


def ingest(ctx, pdf: Path, cancel_after: float | None) -> dict:
    from rag_core.health import check

    lines: list[tuple[float, float, str]] = []
    started = time.perf_counter()
    asked: list[float] = []

    def progress(message: str, share: float) -> None:
        now = time.perf_counter() - started
        if not lines or share - lines[-1][1] >= 0.05 or now - lines[-1][0] >= 30:
            lines.append((now, share, message))
            print(f"  {now:7.1f}s {share:5.0%} {message}", flush=True)

    def cancelled() -> bool:
        if cancel_after is not None and time.perf_counter() - started >= cancel_after:
            asked.append(asked[0] if asked else time.perf_counter())
            return True
        return False

    with PeakMemory() as peak:
        result = ctx.ingestion.ingest_file(pdf, progress=progress, cancelled=cancelled)
    out = {
        "status": result.status,
        "reason": result.reason,
        "pages": result.pages,
        "chunks": result.chunks,
        "seconds": round(time.perf_counter() - started, 1),
        "peak_mb": round(peak.peak_mb),
        "progress_lines": len(lines),
    }
    if asked:
        out["stopped_after_cancel_s"] = round(time.perf_counter() - asked[0], 1)
        out["documents_left"] = [d.name for d in ctx.ingestion.documents()]
        out["check_problems"] = check(ctx)[0]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=2000)
    ap.add_argument("--out", type=Path, default=Path("/tmp/big2000.pdf"))
    ap.add_argument("--data", type=Path, default=Path("/tmp/big2000-data"))
    ap.add_argument("--cancel-after", type=float, default=60.0, help="seconds into the cancelled run (0: none)")
    ap.add_argument("--question", default=QUESTION)
    ap.add_argument("--show-page", type=int, help="print the text of this page of the built PDF and stop")
    ap.add_argument("--answer", action="store_true", help="answer the question with the configured model too")
    ap.add_argument("--embed", help="embedding provider (hash: the pipeline without the model's time)")
    args = ap.parse_args()

    if not args.out.exists():
        spans = build(args.out, args.pages)
        print("built", args.out, f"{args.out.stat().st_size / 1e6:.0f} MB")
        for first, name, n in spans:
            print(f"  pages {first}-{first + n - 1}: {name}")
    if args.show_page:
        print(page_text(args.out, args.show_page))
        return 0

    figures: dict = {"pdf_mb": round(args.out.stat().st_size / 1e6), "load_1min": os.getloadavg()[0]}
    if args.cancel_after:
        print(f"cancelled run (cancel at {args.cancel_after:g} s):")
        figures["cancelled"] = ingest(context(args.data, args.embed), args.out, args.cancel_after)
    print("full run:")
    ctx = context(args.data, args.embed)
    figures["embed"] = ctx.settings.embed_provider
    figures["full"] = ingest(ctx, args.out, None)
    print(json.dumps(figures["full"]), flush=True)  # the ingest's figures, whatever follows
    found = ctx.chat.retrieve(args.question)
    figures["question"] = args.question
    figures["sources"] = [{"page": s["page"], "score": round(s["score"], 3), "text": s["text"][:80]} for s in found[:5]]
    if args.answer:
        started = time.perf_counter()
        answered = ctx.chat.ask(args.question)
        figures["answer"] = answered.answer
        figures["answer_pages"] = [s["page"] for s in answered.sources][:5]
        figures["answer_s"] = round(time.perf_counter() - started, 1)
    figures["load_1min_end"] = os.getloadavg()[0]
    print(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
