#!/usr/bin/env python
"""Compare OCR engines on pages whose text is known: pages per second and character accuracy.

Why: a scanned page has no text to check an OCR result against, but a text PDF does. Its
pages are rendered to images with PDFium (as a scanner would make them, 200 dpi) and read
back by each engine; the text layer is the truth. English pages come from the SEC filings
and the shared corpus, Chinese and Japanese pages from the corpus's ``cjk/`` PDFs. The real
scans (``scanned_or_image_only/``) have no truth: their OCR text is written out to be read
by eye (``--out``).

    python tools/bench_ocr.py                                   # the engine Docent ships
    python tools/bench_ocr.py --engine rapidocr \\
        --engine rapidocr-onnxruntime=/tmp/ocrenv/ro144/bin/python \\
        --engine tesseract=/tmp/ocrenv/tess/bin/python --tessdata-zh /path/to/tessdata

Each engine runs in its own process (``--child``), one after the other on the same images,
so the figures of one run are side by side; an engine given as NAME=PYTHON runs under that
interpreter (a venv holding it: docs/ocr.md says how those were made).

Figures: pages/s (the whole page: detection, recognition, reading order), character
accuracy = 1 - edit distance / truth length over the text with whitespace removed
(NFKC), and character recall regardless of order (a table read column by column by the
text layer but row by row by OCR is not penalised there).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import unicodedata
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
SEC = SHARED / "eval" / "sec10q" / "data" / "v1" / "docs"
CORPUS = SHARED / "corpus" / "pdfs"

# (language, file, 1-based pages): chosen by kind, not by result: the cover, a statement
# page and a notes page of three filings; the first text page of English corpus PDFs; every
# Chinese and Japanese PDF of the corpus with a text layer (Korean and Arabic: no engine here
# reads them).
PAGES: list[tuple[str, Path, list[int]]] = [
    ("en", SEC / "2022 Q3 AAPL.pdf", [1, 4, 9]),
    ("en", SEC / "2023 Q1 AMZN.pdf", [1, 5, 10]),
    ("en", SEC / "2022 Q3 NVDA.pdf", [1, 3, 12]),
    ("en", CORPUS / "large_page_count" / "pdfjs__freeculture.pdf", [12]),
    ("en", CORPUS / "large_page_count" / "unstructured__DA-619p.pdf", [20]),
    ("en", CORPUS / "encrypted" / "unstructured__copy-protected.pdf", [1]),
    ("zh", CORPUS / "cjk" / "pdfjs__XiaoBiaoSong.pdf", [1]),
    ("zh", CORPUS / "cjk" / "pdfjs__issue12823.pdf", [1]),
    ("zh", CORPUS / "cjk" / "pypdf__issue-914-xmp-data.pdf", [1]),
    ("ja", CORPUS / "cjk" / "pdfjs__issue15340.pdf", [1]),
    ("ja", CORPUS / "cjk" / "pdfjs__issue16063.pdf", [1]),
    ("ja", CORPUS / "cjk" / "pdfminer__jo.pdf", [1]),
    ("ja", CORPUS / "cjk" / "pdfminer__nlp2004slides.pdf", [2, 3]),
]
SCANS = CORPUS / "scanned_or_image_only"
# Chinese prose set as A4 pages, 12 pt, when a CJK font is installed (Debian's fonts-wqy-microhei;
# it also lets PDFium draw the corpus PDFs whose Chinese fonts are not embedded).
CMRC = SHARED / "eval" / "cmrc2018" / "cmrc2018_dev.json"
CJK_FONT = Path("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc")


# ============================================================================ the pages
def render(out: Path, dpi: int) -> list[dict]:
    """Every page above as a PNG in ``out``, with its text layer; real scans without one."""
    import pypdfium2 as pdfium

    items = []
    todo = [(lang, f, p, True) for lang, f, ps in PAGES for p in ps]
    todo += [("scan", f, p, False) for f in sorted(SCANS.glob("*.pdf")) for p in range(1, 100)]
    for lang, path, page, has_truth in todo:
        if not path.exists():
            continue
        pdf = pdfium.PdfDocument(str(path))
        try:
            if page > len(pdf):
                continue
            pg = pdf[page - 1]
            textpage = pg.get_textpage()
            truth = textpage.get_text_bounded()
            textpage.close()
            if not has_truth and "".join(truth.split()):
                continue  # a scan that carries its own OCR layer: not a page to read by eye
            png = out / f"{len(items):03d}.png"
            pg.render(scale=dpi / 72, grayscale=True).to_pil().save(png)
            items.append({"lang": lang, "file": path.name, "page": page, "png": str(png), "truth": truth})
        finally:
            pdf.close()
    if CJK_FONT.exists() and CMRC.exists():
        contexts = [p["context"] for a in json.loads(CMRC.read_text(encoding="utf-8"))["data"] for p in a["paragraphs"]]
        for k in range(4):  # the first four contexts of the dev set, cut at 700 characters
            text = contexts[k][:700]
            png = out / f"{len(items):03d}.png"
            _set_page(text, dpi).save(png)
            items.append({"lang": "zh", "file": f"cmrc DEV_{k}", "page": 1, "png": str(png), "truth": text})
    return items


def _set_page(text: str, dpi: int):
    """``text`` set on a white A4 page in 12 pt, wrapped at the margins, as a scanner would see it."""
    from PIL import Image, ImageDraw, ImageFont

    px = dpi / 72
    page = Image.new("L", (int(595 * px), int(842 * px)), 255)
    draw = ImageDraw.Draw(page)
    font = ImageFont.truetype(str(CJK_FONT), int(12 * px))
    left, width, y = int(60 * px), int(475 * px), int(70 * px)
    for para in text.split("\n"):
        line = ""
        for ch in para:
            if draw.textlength(line + ch, font=font) > width:
                draw.text((left, y), line, font=font, fill=0)
                y, line = y + int(20 * px), ""
            line += ch
        if line:
            draw.text((left, y), line, font=font, fill=0)
            y += int(20 * px)
    return page


# ============================================================================ metrics
def squash(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKC", text) if not c.isspace())


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance, one row at a time in numpy (the insertions as a running minimum)."""
    import numpy as np

    if not a or not b:
        return max(len(a), len(b))
    bb = np.frombuffer(b.encode("utf-32-le"), dtype=np.uint32)
    idx = np.arange(len(b) + 1)
    prev = idx.copy()
    for i, ch in enumerate(a, 1):
        cost = (bb != ord(ch)).astype(np.int64)
        cur = np.empty_like(prev)
        cur[0] = i
        cur[1:] = np.minimum(prev[:-1] + cost, prev[1:] + 1)
        prev = np.minimum.accumulate(cur - idx) + idx
    return int(prev[-1])


def scores(ocr: str, truth: str) -> tuple[float, float]:
    o, t = squash(ocr), squash(truth)
    acc = max(0.0, 1 - edit_distance(o, t) / max(len(t), 1))
    common = sum((Counter(o) & Counter(t)).values())
    return acc, common / max(len(t), 1)


# ============================================================================ engines (child side)
def _engine(name: str, args: argparse.Namespace):
    """A callable ``(png_path, lang) -> text`` for one engine."""
    if name == "docent":  # what Docent itself runs (rag_core.loaders.ocr)
        sys.path.insert(0, str(ROOT))
        from PIL import Image

        from rag_core.loaders.ocr import OcrEngine

        docent = OcrEngine()
        return lambda png, lang: docent.read(Image.open(png)).text
    if name == "rapidocr":
        from rapidocr import RapidOCR

        r3 = RapidOCR(params={"Global.log_level": "warning"})

        def run_r3(png: str, lang: str) -> str:
            res = r3(png)
            return _lines(list(zip(res.boxes, res.txts, strict=True)) if res.txts else [])

        return run_r3
    if name == "rapidocr-onnxruntime":
        from rapidocr_onnxruntime import RapidOCR as RapidOCR14

        r14 = RapidOCR14()

        def run_r14(png: str, lang: str) -> str:
            res, _ = r14(png)
            return _lines([(box, text) for box, text, _score in res or []])

        return run_r14
    if name == "tesseract":
        import tesserocr
        from PIL import Image

        apis = {}

        def run_tess(png: str, lang: str) -> str:
            code = {"en": "eng", "zh": "chi_sim", "ja": "chi_sim"}.get(lang, "eng")
            if code not in apis:
                path = args.tessdata_zh if code == "chi_sim" else os.path.join(sys.prefix, "share", "tessdata")
                apis[code] = tesserocr.PyTessBaseAPI(path=path, lang=code)
            apis[code].SetImage(Image.open(png))
            return apis[code].GetUTF8Text()

        return run_tess
    raise SystemExit(f"unknown engine {name}")


def _lines(items: list) -> str:
    """Boxes and texts as lines: boxes grouped into rows by their vertical middle, left to right."""
    rows: list[list] = []
    for box, text in sorted(items, key=lambda it: (sum(p[1] for p in it[0]) / 4, it[0][0][0])):
        mid = sum(p[1] for p in box) / 4
        height = abs(box[3][1] - box[0][1]) or 1
        if rows and abs(rows[-1][0] - mid) < 0.5 * height:
            rows[-1][1].append((box[0][0], text))
        else:
            rows.append([mid, [(box[0][0], text)]])
    return "\n".join(" ".join(t for _, t in sorted(parts)) for _, parts in rows)


def child(args: argparse.Namespace) -> None:
    t0 = time.perf_counter()
    run = _engine(args.child, args)
    load_s = time.perf_counter() - t0
    print(json.dumps({"load_s": load_s}), flush=True)
    for line in sys.stdin:
        item = json.loads(line)
        t = time.perf_counter()
        text = run(item["png"], item["lang"])
        print(json.dumps({"png": item["png"], "text": text, "s": time.perf_counter() - t}), flush=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"peak_mb": peak}), flush=True)


# ============================================================================ the parent
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engine", action="append", help="NAME or NAME=PYTHON (default: docent)")
    ap.add_argument("--dpi", type=int, default=200)
    ap.add_argument("--tessdata-zh", default="", help="folder holding chi_sim.traineddata (tesseract)")
    ap.add_argument("--out", type=Path, help="write each engine's text of the real scans here")
    ap.add_argument("--limit", type=int, default=0, help="at most this many pages (a quick look)")
    ap.add_argument("--langs", default="en,zh,ja,scan", help="which pages: en, zh, ja, scan (comma-separated)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    if not SHARED.exists():
        raise SystemExit(f"{SHARED} is missing: the pages come from the shared corpus")
    engines = [e.split("=", 1) if "=" in e else [e, sys.executable] for e in (args.engine or ["docent"])]
    with tempfile.TemporaryDirectory(prefix="docent-ocr-bench-") as tmp:
        items = render(Path(tmp), args.dpi)
        items = [it for it in items if it["lang"] in args.langs.split(",")]
        if args.limit:
            items = items[: args.limit]
        print(f"{len(items)} pages at {args.dpi} dpi; load average {os.getloadavg()[0]:.1f}", file=sys.stderr)
        report = {name: run_engine(name, python, items, args) for name, python in engines}
    if args.json:
        print(json.dumps(report, ensure_ascii=False))
        return
    print_table(report)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        for name, rep in report.items():
            scans = [p for p in rep["pages"] if p["lang"] == "scan"]
            body = "\n\n".join(f"===== {p['file']} page {p['page']}\n{p['text']}" for p in scans)
            (args.out / f"scans-{name}.txt").write_text(body, encoding="utf-8")
        print(f"scan texts in {args.out}")


def run_engine(name: str, python: str, items: list[dict], args: argparse.Namespace) -> dict:
    cmd = [python, str(Path(__file__).resolve()), "--child", name, "--tessdata-zh", args.tessdata_zh]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=_env())
    assert proc.stdin and proc.stdout
    load = json.loads(proc.stdout.readline())
    pages = []
    for item in items:
        proc.stdin.write(json.dumps({"png": item["png"], "lang": item["lang"]}) + "\n")
        proc.stdin.flush()
        got = json.loads(proc.stdout.readline())
        acc, recall = scores(got["text"], item["truth"]) if item["lang"] != "scan" else (None, None)
        pages.append(
            {**{k: item[k] for k in ("lang", "file", "page")}, "s": got["s"], "text": got["text"]}
            | {
                "accuracy": acc,
                "recall": recall,
            }
        )
        print(f"  {name} {item['file']} p{item['page']}: {got['s']:.1f} s", file=sys.stderr)
    proc.stdin.close()
    peak = json.loads(proc.stdout.readline())["peak_mb"]
    proc.wait()
    return {"load_s": load["load_s"], "peak_mb": peak, "pages": pages}


def _env() -> dict:
    env = dict(os.environ)
    env.setdefault("OMP_THREAD_LIMIT", "2")
    return env


def print_table(report: dict) -> None:
    langs = ["en", "zh", "ja", "scan"]
    print(f"{'engine':<22} {'lang':<5} {'pages':>5} {'pages/s':>8} {'char acc':>9} {'recall':>7}")
    for name, rep in report.items():
        for lang in langs:
            ps = [p for p in rep["pages"] if p["lang"] == lang]
            if not ps:
                continue
            secs = sum(p["s"] for p in ps)
            acc = sum(p["accuracy"] for p in ps) / len(ps) if lang != "scan" else None
            rec = sum(p["recall"] for p in ps) / len(ps) if lang != "scan" else None
            print(
                f"{name:<22} {lang:<5} {len(ps):>5} {len(ps) / secs:>8.2f} "
                + (f"{acc:>9.3f} {rec:>7.3f}" if acc is not None else f"{'–':>9} {'–':>7}")
            )
        print(f"{name:<22} load {rep['load_s']:.1f} s, peak {rep['peak_mb']:.0f} MB")
    print("\nper page (char accuracy):")
    names = list(report)
    first = report[names[0]]["pages"]
    print(f"{'page':<44}" + "".join(f"{n[:18]:>20}" for n in names))
    for i, p in enumerate(first):
        if p["lang"] == "scan":
            continue
        cells = "".join(
            f"{report[n]['pages'][i]['accuracy']:>13.3f} {report[n]['pages'][i]['s']:>5.1f}s" for n in names
        )
        print(f"{(p['lang'] + ' ' + p['file'])[:38] + ' p' + str(p['page']):<44}{cells}")


if __name__ == "__main__":
    main()
