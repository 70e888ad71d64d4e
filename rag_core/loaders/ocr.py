"""Pages without a usable text layer read by OCR: RapidOCR (PP-OCRv6 small, ONNX; its models
ship inside the ``rapidocr`` wheel, nothing is downloaded) on the page rendered by PDFium.

Why this engine: one model reads Chinese, English, Japanese and the Latin-script languages,
its weights come with the PyPI package, and it runs on the onnxruntime Docent already has;
Tesseract reads English faster but has no Chinese model on PyPI (docs/ocr.md: the figures).

A page's result is kept as rows of segments with their boxes (fractions of the page, so the
viewer can draw them at any zoom): the text is the rows in reading order, top to bottom, each
row's segments left to right joined by a space, so a table reads as rows, as PDFium's text of
a table does. ``OcrPage.spans`` maps a character of that text back to its segment's box.

The engine is loaded once per process (the parse worker keeps it between files) and reads
one page at a time: memory is bounded by the page image, which is capped in pixels.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

DPI = 200  # a scanner's usual resolution: 10 pt text is ~28 px high
MAX_SIDE_PX = 3500  # a poster-sized page is rendered smaller than DPI: memory stays bounded
ENGINE = "rapidocr 3.10 PP-OCRv6 small"
LANGUAGES = "Chinese (simplified and traditional), English, Japanese, and Latin-script European languages"

Box = tuple[float, float, float, float]  # left, top, right, bottom as fractions of the page


@dataclass
class OcrSegment:
    text: str
    box: Box


@dataclass
class OcrPage:
    """One page as OCR read it: rows in reading order, segments left to right."""

    rows: list[list[OcrSegment]] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(" ".join(seg.text for seg in row) for row in self.rows)

    def spans(self) -> list[tuple[int, int, Box]]:
        """``(start, end, box)`` of every segment in ``text``."""
        out, pos = [], 0
        for row in self.rows:
            for k, seg in enumerate(row):
                if k:
                    pos += 1  # the space between segments
                out.append((pos, pos + len(seg.text), seg.box))
                pos += len(seg.text)
            pos += 1  # the line break
        return out

    def boxes_for(self, spans: list[tuple[int, int]]) -> list[Box]:
        """The boxes of the segments that the character spans ``[start, end)`` of ``text`` touch."""
        return [box for start, end, box in self.spans() if any(start < e and s < end for s, e in spans)]

    def to_json(self) -> list:
        return [[[s.text, *(round(v, 5) for v in s.box)] for s in row] for row in self.rows]

    @classmethod
    def from_json(cls, rows: list) -> OcrPage:
        return cls(
            [[OcrSegment(str(s[0]), (float(s[1]), float(s[2]), float(s[3]), float(s[4]))) for s in row] for row in rows]
        )


def reading_order(items: list[tuple[Box, str]]) -> OcrPage:
    """Segments grouped into rows: a segment joins the row when its vertical middle and the
    middle of the row's first segment are within half the smaller of their heights (a table's
    cells on one line; a tall heading does not swallow the line beside it), else it starts the
    next row. Two columns of prose are read across, row by row: tables matter more here."""
    rows: list[list[OcrSegment]] = []
    anchor = (0.0, 0.0)  # middle and height of the current row's first segment
    for box, text in sorted(items, key=lambda it: ((it[0][1] + it[0][3]) / 2, it[0][0])):
        text = " ".join(text.split())
        if not text:
            continue
        mid, height = (box[1] + box[3]) / 2, box[3] - box[1]
        if rows and abs(mid - anchor[0]) <= 0.5 * min(height, anchor[1]):
            rows[-1].append(OcrSegment(text, box))
        else:
            rows.append([OcrSegment(text, box)])
            anchor = (mid, height)
    for row in rows:
        row.sort(key=lambda s: s.box[0])
    return OcrPage(rows)


def render_scale(width_pt: float, height_pt: float) -> float:
    """PDFium's scale for a page: ``DPI``, less for a page whose longer side would pass ``MAX_SIDE_PX``."""
    scale = DPI / 72
    longest = max(width_pt, height_pt, 1.0) * scale
    return scale * min(1.0, MAX_SIDE_PX / longest)


class OcrEngine:
    """RapidOCR with the models of its own wheel (explicit paths: never a download)."""

    def __init__(self) -> None:
        import rapidocr
        from rapidocr import RapidOCR

        models = Path(rapidocr.__file__).parent / "models"
        paths = {
            "Det.model_path": models / "PP-OCRv6_det_small.onnx",
            "Rec.model_path": models / "PP-OCRv6_rec_small.onnx",
            "Cls.model_path": models / "ch_ppocr_mobile_v2.0_cls_mobile.onnx",
        }
        missing = [p.name for p in paths.values() if not p.is_file()]
        if missing:
            raise RuntimeError(f"the OCR models are missing from the rapidocr package: {', '.join(missing)}")
        params: dict[str, Any] = {k: str(v) for k, v in paths.items()}
        params["Global.log_level"] = "error"
        # Threads bounded: the app and the embedding run beside it, and each thread's arena
        # counts against the parse worker's memory budget.
        params["EngineConfig.onnxruntime.intra_op_num_threads"] = min(os.cpu_count() or 1, 4)
        params["EngineConfig.onnxruntime.inter_op_num_threads"] = 1
        self._engine = RapidOCR(params=params)
        logging.getLogger("RapidOCR").setLevel(logging.ERROR)

    def read(self, image) -> OcrPage:
        """``image`` (PIL) read into rows of segments, boxes as fractions of the image."""
        import numpy as np

        width, height = image.size
        result: Any = self._engine(np.asarray(image.convert("RGB")))
        if getattr(result, "boxes", None) is None or not getattr(result, "txts", None):
            return OcrPage()
        items: list[tuple[Box, str]] = []
        for quad, text in zip(result.boxes, result.txts, strict=True):
            xs, ys = [float(p[0]) for p in quad], [float(p[1]) for p in quad]
            left, top = max(0.0, min(xs) / width), max(0.0, min(ys) / height)
            items.append(((left, top, min(1.0, max(xs) / width), min(1.0, max(ys) / height)), str(text)))
        return reading_order(items)


_engine: OcrEngine | None = None
_engine_lock = threading.Lock()


def engine() -> OcrEngine:
    """The process's engine, loaded on first use (about 1-2 s, ~0.5 GB)."""
    global _engine
    with _engine_lock:
        if _engine is None:
            _engine = OcrEngine()
        return _engine


SIDECAR_DIR = "ocr"  # under the data folder: one JSON file per OCR'd file, named by its sha256


def sidecar_path(data_dir: Path, sha256: str) -> Path:
    return Path(data_dir) / SIDECAR_DIR / f"{sha256}.json"


def sidecar_json(pages: dict[int, OcrPage]) -> str:
    """What OCR read of a file, for the viewer's boxes and to skip OCR when it is read again."""
    body = {str(n): page.to_json() for n, page in sorted(pages.items())}
    return json.dumps({"version": 1, "engine": ENGINE, "pages": body}, ensure_ascii=False)


def read_sidecar(path: Path | str | None) -> dict[int, OcrPage]:
    """The pages of a sidecar by this engine; empty when absent, unreadable or by another engine."""
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if data.get("version") != 1 or data.get("engine") != ENGINE:
            return {}
        return {int(n): OcrPage.from_json(rows) for n, rows in data["pages"].items()}
    except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError) as e:
        logger.info("OCR sidecar %s not used: %s", path, e)
        return {}


@dataclass
class OcrRequest:
    """What a loader needs to OCR: whether to, what was read before, whom to tell."""

    enabled: bool = False
    cached: dict[int, OcrPage] = field(default_factory=dict)  # 1-based page -> a previous result
    progress: Callable[[int, int, int], None] | None = None  # (page, k, of) before each page
    before_ocr: Callable[[int], None] | None = None  # (pages to read) once, before the first


_MEMORY_WORDS = ("failed to map segment", "cannot allocate memory", "bad_alloc", "failed to allocate")


def _out_of_memory_as_such(call: Callable[..., Any], *args: Any) -> Any:
    """``call(*args)``, with the ways a native library says it ran out of address space (a shared
    object that cannot be mapped, onnxruntime's failed allocation) raised as MemoryError, so
    that the budget reports memory, not a bug."""
    try:
        return call(*args)
    except MemoryError:
        raise
    except Exception as e:
        if any(word in str(e).lower() for word in _MEMORY_WORDS):
            raise MemoryError(str(e)) from e
        raise


def ocr_pages(path: Path, numbers: list[int], request: OcrRequest, lock: threading.Lock) -> dict[int, OcrPage]:
    """Pages ``numbers`` (1-based) of the PDF at ``path`` read by OCR, one at a time: each is
    rendered with ``lock`` held (PDFium is not thread-safe), then read without it."""
    import pypdfium2 as pdfium

    todo = [n for n in numbers if n not in request.cached]
    out = {n: request.cached[n] for n in numbers if n in request.cached}
    if not todo:
        return out
    if request.before_ocr:
        request.before_ocr(len(todo))
    for k, number in enumerate(todo, start=1):
        if request.progress:
            request.progress(number, k, len(todo))
        reader = _out_of_memory_as_such(engine)  # loaded with the first page, within its allowance
        with lock:
            pdf = pdfium.PdfDocument(str(path))
            try:
                page = pdf[number - 1]
                try:
                    scale = render_scale(*page.get_size())
                    image = page.render(scale=scale, grayscale=True).to_pil()
                finally:
                    page.close()
            finally:
                pdf.close()
        out[number] = _out_of_memory_as_such(reader.read, image)
        del image
    return out
