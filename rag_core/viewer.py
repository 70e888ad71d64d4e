"""Open a source at its passage: a PDF page rendered with the passage highlighted, or, for
the other formats, the passage with the text around it.

A passage is a chunk of the text Docent extracted from the page, so its whitespace may
differ from the PDF's text layer and it may start mid-sentence. It is located in PDFium's
character list with whitespace ignored and case folded: the whole passage if it is there,
else its first and last 60 characters, else sentence by sentence; PDFium then gives the
rectangles (one per line) of the matched characters. A page read by OCR has no characters
there: the passage is located in the OCR text kept beside the file (``<data_dir>/ocr/``) and
the boxes of its lines are drawn. PDFium is not thread-safe, and
Streamlit runs every session in a thread: every PDFium call holds ``rag_core.pdfium.PDFIUM_LOCK``.

Rendered pages are cached under ``<data_dir>/cache/pages/`` keyed by the file's sha256,
the page, the zoom and the highlighted text, so a page is rendered once. The cache is
only ever a copy of what can be rendered again; the oldest entries go past ``MAX_CACHED``.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import re
import threading
import unicodedata
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rag_core.errors import DocentError, NotFoundError
from rag_core.files import atomic_write
from rag_core.index import VectorIndex
from rag_core.loaders import PDF_EXTS, load_file
from rag_core.loaders.ocr import OcrPage, read_sidecar, sidecar_path
from rag_core.pdfium import PDFIUM_LOCK
from rag_core.settings import DocentSettings
from rag_core.storage import DocumentRecord, DocumentRegistry

logger = logging.getLogger(__name__)

RENDER_VERSION = 1  # bump when the drawing changes: old cache entries are then never read
MAX_CACHED = 400  # rendered pages kept on disk (about 150 KB each at zoom 1.5)
MIN_ZOOM, MAX_ZOOM = 0.25, 4.0
EDGE = 60  # characters of a passage's start and end searched when the whole is not found
HIGHLIGHT_FILL = (255, 213, 0, 96)
HIGHLIGHT_LINE = (214, 140, 0, 255)

Box = tuple[float, float, float, float]  # left, top, right, bottom in image pixels


@dataclass
class PageImage:
    """One rendered PDF page; ``boxes`` are the highlight rectangles in image pixels."""

    png: bytes
    page: int  # 1-based
    pages: int  # the document's page count
    boxes: list[Box] = field(default_factory=list)
    found: bool = False  # the highlight text was located on the page
    width: int = 0
    height: int = 0
    ocr: bool = False  # the page's text was read by OCR from the scan shown


@dataclass
class PassageContext:
    """A passage with the document text before and after it (``found`` False: not located)."""

    before: str
    passage: str
    after: str
    found: bool


# ============================================================================ matching
def fold(text: str) -> tuple[str, list[int]]:
    """``text`` without whitespace or control/format characters, NFKC and lower-cased, with
    the index in ``text`` of every character kept: matching ignores line breaks, soft
    hyphens and ligatures, and a match maps back to the original characters."""
    out: list[str] = []
    where: list[int] = []
    for i, c in enumerate(text):
        if c.isspace() or unicodedata.category(c)[0] == "C":
            continue
        for f in unicodedata.normalize("NFKC", c).lower():
            if not f.isspace():
                out.append(f)
                where.append(i)
    return "".join(out), where


_SENTENCE = re.compile(r"(?<=[.!?;:。！？])\s+|\n+")


def locate(haystack: str, needle: str) -> list[tuple[int, int]]:
    """Spans ``[start, end)`` of the folded ``haystack`` covering the folded ``needle``:
    the whole of it, else from its first to its last ``EDGE`` characters, else each of its
    sentences that is there (in order). Empty when nothing was found."""
    q, _ = fold(needle)
    if not q or not haystack:
        return []
    i = haystack.find(q)
    if i >= 0:
        return [(i, i + len(q))]
    if len(q) > 2 * EDGE:
        head, tail = q[:EDGE], q[-EDGE:]
        s = haystack.find(head)
        e = haystack.find(tail, s + EDGE) if s >= 0 else -1
        if s >= 0 and e >= 0 and e + EDGE - s <= 2 * len(q):
            return [(s, e + EDGE)]
    spans: list[tuple[int, int]] = []
    pos = 0
    for sentence in _SENTENCE.split(needle):
        part, _ = fold(sentence)
        if len(part) < 12:  # too short to be told apart from the same words elsewhere
            continue
        j = haystack.find(part, pos)
        if j < 0:
            j = haystack.find(part)
        if j >= 0:
            spans.append((j, j + len(part)))
            pos = j + len(part)
    return _merge(spans)


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for s, e in sorted(spans):
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


# ============================================================================ the viewer
class Viewer:
    """Page images and passages in context for the sources of answers. Shared by every
    session (nothing per-user); thread-safe."""

    def __init__(self, settings: DocentSettings, registry: DocumentRegistry, index: VectorIndex) -> None:
        self.settings = settings
        self.registry = registry
        self.index = index
        self.cache_dir = settings.paths.page_cache
        self.renders = 0  # pages actually rendered (not served from the cache)
        self._texts: OrderedDict[str, str] = OrderedDict()  # sha256 -> document text, a few kept
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ PDF pages
    def page_image(self, name: str, page: int, highlight: str | None = None, zoom: float = 1.5) -> PageImage:
        """Page ``page`` (1-based) of the PDF ``name`` as a PNG, ``highlight`` marked on it."""
        record = self._record(name)
        if Path(name).suffix.lower() not in PDF_EXTS:
            raise DocentError(
                f"{name} is not a PDF ({record.kind}): it has no pages to show; show the passage in its text instead."
            )
        if not MIN_ZOOM <= zoom <= MAX_ZOOM:
            raise DocentError(f"Zoom {zoom} is out of range: use {MIN_ZOOM} to {MAX_ZOOM}.")
        path = self._stored(name)
        folded = fold(highlight)[0] if highlight else ""
        key = hashlib.sha256(
            f"v{RENDER_VERSION}|{record.sha256}|{page}|{zoom:.3f}|{hashlib.sha256(folded.encode()).hexdigest()}".encode()
        ).hexdigest()[:40]
        png_path, meta_path = self.cache_dir / f"{key}.png", self.cache_dir / f"{key}.json"
        cached = self._cached(png_path, meta_path)
        if cached is not None:
            return cached
        scanned = read_sidecar(sidecar_path(self.settings.data_dir, record.sha256)).get(page)
        image = self._render(path, name, page, highlight if folded else None, zoom, scanned)
        atomic_write(png_path, image.png)
        meta = {k: v for k, v in asdict(image).items() if k != "png"}
        atomic_write(meta_path, json.dumps(meta))
        self._prune()
        return image

    def _cached(self, png_path: Path, meta_path: Path) -> PageImage | None:
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            png = png_path.read_bytes()
            return PageImage(png=png, **{**meta, "boxes": [tuple(b) for b in meta["boxes"]]})
        except (OSError, ValueError, TypeError, KeyError):
            return None  # not cached (or a half-pruned entry): render again

    def _render(
        self, path: Path, name: str, page: int, highlight: str | None, zoom: float, scanned: OcrPage | None = None
    ) -> PageImage:
        import pypdfium2 as pdfium

        with PDFIUM_LOCK:
            try:
                pdf = pdfium.PdfDocument(str(path))
            except pdfium.PdfiumError as e:
                raise DocentError(f"Cannot open the stored copy of {name} ({e}); upload it again.") from e
            try:
                pages = len(pdf)
                if not 1 <= page <= pages:
                    raise DocentError(f"{name} has {pages} page(s); there is no page {page}.")
                pdf_page = pdf[page - 1]
                try:
                    bitmap = pdf_page.render(scale=zoom)
                    image = bitmap.to_pil().convert("RGB")  # a copy: the bitmap is freed with the page
                    boxes = self._boxes(pdf_page, bitmap, highlight) if highlight else []
                finally:
                    pdf_page.close()
            finally:
                pdf.close()
            self.renders += 1
        if highlight and not boxes and scanned is not None:
            folded, where = fold(scanned.text)
            spans = [(where[s], where[e - 1] + 1) for s, e in locate(folded, highlight)]
            w, h = image.width, image.height
            boxes = [(a * w, b * h, c * w, d * h) for a, b, c, d in scanned.boxes_for(spans)]
        boxes = [_clip(b, image.width, image.height) for b in boxes]
        boxes = [b for b in boxes if b[2] > b[0] and b[3] > b[1]]
        if boxes:
            _draw(image, boxes)
        buf = io.BytesIO()
        image.save(buf, format="PNG")
        return PageImage(
            buf.getvalue(), page, pages, boxes, bool(boxes), image.width, image.height, scanned is not None
        )

    @staticmethod
    def _boxes(pdf_page, bitmap, highlight: str) -> list[Box]:
        """The rectangles, in bitmap pixels, of the characters of ``highlight`` on the page.
        Called with ``PDFIUM_LOCK`` held."""
        import pypdfium2.raw as pdfium_c

        textpage = pdf_page.get_textpage()
        try:
            chars = "".join(chr(pdfium_c.FPDFText_GetUnicode(textpage, i)) for i in range(textpage.count_chars()))
            folded, where = fold(chars)
            posconv = bitmap.get_posconv(pdf_page)
            boxes: list[Box] = []
            for s, e in locate(folded, highlight):
                first, last = where[s], where[e - 1]
                for r in range(textpage.count_rects(first, last - first + 1)):
                    left, bottom, right, top = textpage.get_rect(r)
                    corners = [posconv.to_bitmap(x, y) for x in (left, right) for y in (bottom, top)]
                    xs, ys = [c[0] for c in corners], [c[1] for c in corners]
                    boxes.append((float(min(xs)), float(min(ys)), float(max(xs)), float(max(ys))))
            return boxes
        finally:
            textpage.close()

    def _prune(self) -> None:
        """Keep the newest ``MAX_CACHED`` rendered pages (the cache is only ever a copy)."""
        try:
            pngs = sorted(self.cache_dir.glob("*.png"), key=lambda p: p.stat().st_mtime)
            for old in pngs[: max(0, len(pngs) - MAX_CACHED)]:
                old.with_suffix(".json").unlink(missing_ok=True)
                old.unlink(missing_ok=True)
        except OSError as e:  # another thread pruned the same file: nothing lost
            logger.debug("page cache prune: %s", e)

    # ------------------------------------------------------------------ passages in their text
    def passage_in_context(self, name: str, passage: str, chars: int = 1500) -> PassageContext:
        """``passage`` with up to ``chars`` characters of the document before and after it."""
        text = self._text(name)
        offset, window = _window(text, passage)
        folded, where = fold(window)
        spans = locate(folded, passage)
        if not spans and len(window) < len(text):  # the passage's start misled the anchor: the whole text
            offset, folded, where = 0, *fold(text)
            spans = locate(folded, passage)
        if not spans:
            return PassageContext("", passage, "", False)
        start, end = offset + where[spans[0][0]], offset + where[spans[-1][1] - 1] + 1
        before, after = text[max(0, start - chars) : start], text[end : end + chars]
        if start > chars:
            before = "…" + before[_word_start(before) :]
        if end + chars < len(text):
            after = after[: _word_end(after)] + "…"
        return PassageContext(before, text[start:end], after, True)

    def _text(self, name: str) -> str:
        """The document's text (its parts joined), from the stored copy, else from its chunks."""
        record = self._record(name)
        with self._lock:
            if record.sha256 in self._texts:
                self._texts.move_to_end(record.sha256)
                return self._texts[record.sha256]
        try:
            path = self._stored(name)
        except NotFoundError:
            text = self._text_from_chunks(name)
        else:  # parsed outside our lock: a PDF takes PDFIUM_LOCK inside load_file
            text = "\n\n".join(d.text for d in load_file(path, name, record.sha256).documents)
        with self._lock:
            self._texts[record.sha256] = text
            while len(self._texts) > 4:
                self._texts.popitem(last=False)
        return text

    def _text_from_chunks(self, name: str) -> str:
        """The parts of a document rebuilt from its chunks in Chroma, each chunk placed at its
        offset in its part (chunks overlap)."""
        parts: dict[str, list] = {}
        for node in self.index.all_nodes([name]):
            parts.setdefault(node.ref_doc_id or "", []).append(node)
        if not parts:
            raise NotFoundError(f"Neither the stored copy nor the chunks of {name} are here; upload it again.")
        texts = []
        for ref in sorted(parts):
            text = ""
            for node in sorted(parts[ref], key=lambda n: n.start_char_idx or 0):
                at = node.start_char_idx
                if at is None or at > len(text):
                    text += ("\n" if text else "") + node.text
                else:
                    text = text[:at] + node.text + text[at + len(node.text) :]
            texts.append(text)
        return "\n\n".join(texts)

    # ------------------------------------------------------------------ the document
    def _record(self, name: str) -> DocumentRecord:
        record = self.registry.get(name)
        if record is None or record.status != "indexed":
            raise NotFoundError(f"No document named {name!r} is indexed here; upload it to see its pages.")
        return record

    def _stored(self, name: str) -> Path:
        root = self.settings.paths.files.resolve()
        path = (root / name).resolve()
        if not path.is_relative_to(root) or not path.is_file():
            raise NotFoundError(f"The stored copy of {name} is missing; upload the file again to view it.")
        return path


def _window(text: str, passage: str) -> tuple[int, str]:
    """Where in a long ``text`` the passage must be, found by its first characters with any
    whitespace between them, so that only that stretch is folded (a 1,000-page book folds
    in most of a second). ``(0, text)`` when the text is short or the start is not there."""
    head = "".join(passage.split())[:40]
    if len(text) < 50_000 or len(head) < 12:
        return 0, text
    m = re.search(r"\s*".join(map(re.escape, head)), text, re.IGNORECASE)
    if m is None:
        return 0, text
    start = max(0, m.start() - 200)
    return start, text[start : m.start() + 2 * len(passage) + 200]


def _clip(box: Box, width: int, height: int) -> Box:
    pad = 2.0
    left, top, right, bottom = box
    return (max(0.0, left - pad), max(0.0, top - pad), min(float(width), right + pad), min(float(height), bottom + pad))


def _draw(image, boxes: list[Box]) -> None:
    from PIL import Image, ImageDraw

    overlay = Image.new("RGBA", image.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(overlay)
    for box in boxes:
        draw.rectangle(box, fill=HIGHLIGHT_FILL, outline=HIGHLIGHT_LINE, width=2)
    image.paste(Image.alpha_composite(image.convert("RGBA"), overlay).convert("RGB"))


def _word_start(text: str) -> int:
    m = re.search(r"\s", text)
    return m.end() if m and m.end() < len(text) else 0


def _word_end(text: str) -> int:
    m = re.search(r"\s\S*$", text)
    return m.start() if m and m.start() > 0 else len(text)
