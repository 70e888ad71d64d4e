"""DOCX: the WordprocessingML inside the ZIP, read with the standard library (zipfile +
ElementTree): body paragraphs and tables in order, split into sections on heading styles,
then headers/footers and footnotes as extra sections. python-docx would give the same text
and still not footnotes or text boxes.

Refused before its XML is parsed: encrypted (OLE-wrapped) and old .doc files, a part
larger than ``MAX_UNPACKED_XML`` once inflated (a ZIP bomb), a part that declares a DTD (an
entity-expansion attack: Word never writes one), and a part with more than
``MAX_XML_ELEMENTS`` elements, counted in the bytes before parsing: memory and time grow with
the element count (a 240 KB .docx can hold 95 MB of one-letter runs, 12 million elements,
1.3 GB and 12 s to read), while an 872-page handbook has about 100,000.
"""

from __future__ import annotations

import io
import re
import zipfile
import zlib
from collections.abc import Iterator
from xml.etree import ElementTree
from xml.parsers.expat import errors as expat_errors

from rag_core.errors import IngestError
from rag_core.loaders.documents import LoadedFile, tidy, too_much_text
from rag_core.loaders.reasons import CFB, short, sniff
from rag_core.loaders.sections import Block, section_documents

# Largest XML part read from a .docx once unpacked: a 1,000-page document is ~6 MB; a
# ZIP bomb is refused before it is inflated. Read through the package at call time
# (``rag_core.loaders.MAX_UNPACKED_XML``), where tests and callers change it.
MAX_UNPACKED_XML = 100 * 1024 * 1024
# Most elements one XML part may hold: 30 times an 872-page handbook, ~300 MB of ElementTree.
MAX_XML_ELEMENTS = 3_000_000
_TAG = re.compile(rb"<[^>]*>")

_EXPAT_NO_MEMORY = expat_errors.codes[expat_errors.XML_ERROR_NO_MEMORY]
_ENCRYPTED_PACKAGE = "EncryptedPackage".encode("utf-16-le")
_HEADING_NAME = re.compile(r"^heading\s*([1-9])$", re.I)


def _limits() -> tuple[int, int, int]:
    from rag_core import loaders  # the package, fully imported by the time a file is read

    return loaders.MAX_UNPACKED_XML, loaders.MAX_XML_ELEMENTS, loaders.MAX_TEXT_CHARS


def load_docx(data: bytes, name: str, sha256: str) -> LoadedFile:
    if data.startswith(CFB):
        # Office wraps a password-protected .docx in an OLE compound file.
        if _ENCRYPTED_PACKAGE in data:
            raise IngestError(name, "encrypted: needs a password")
        raise IngestError(name, "old Word .doc format with a .docx name: open it in Word and save it as .docx")
    if not data.startswith(b"PK"):
        what = sniff(data)
        raise IngestError(
            name, f"not a Word .docx file: it is {what}" if what else "damaged Word file (not a ZIP archive)"
        )
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            main = _docx_main_part(zf)
            if main not in zf.NameToInfo:
                raise IngestError(name, "not a Word document: the archive has no word/document.xml")
            styles = _docx_heading_styles(zf, name)
            body = _docx_xml(zf, main, name)
            blocks = list(_docx_blocks(body, styles))
            extras = _docx_extras(zf, name)
    except IngestError:
        raise
    except RecursionError as e:
        raise IngestError(name, "damaged Word file (nested too deeply to read)") from e
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, KeyError) as e:
        raise IngestError(name, f"damaged Word file ({short(e)})") from e
    except RuntimeError as e:  # zipfile: "File ... is encrypted, password required"
        if "encrypted" in str(e).lower():
            raise IngestError(name, "encrypted: needs a password") from e
        raise IngestError(name, f"damaged Word file ({short(e)})") from e
    for title, texts in extras:
        blocks.append((1, title))
        blocks.extend((None, t) for t in texts)
    docs = section_documents(((lvl, tidy(t)) for lvl, t in blocks if lvl is None or t.strip()), name, sha256)
    if not any(d.text.strip() for d in docs):
        raise IngestError(name, "no text: the Word document is empty or holds only images")
    return LoadedFile(name, docs, pages=0, kind="docx")


def _local(tag: object) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _attr(el: ElementTree.Element, local: str) -> str | None:
    for key, value in el.attrib.items():
        if _local(key) == local:
            return value
    return None


def _child(el: ElementTree.Element, local: str) -> ElementTree.Element | None:
    return next((c for c in el if _local(c.tag) == local), None)


def _docx_xml(zf: zipfile.ZipFile, part: str, name: str) -> ElementTree.Element:
    max_bytes, max_elements, max_chars = _limits()
    info = zf.getinfo(part)
    if info.file_size > max_bytes:
        raise IngestError(name, f"too large when unpacked: {part} is {info.file_size / 1e6:.0f} MB")
    with zf.open(info) as f:
        raw = f.read(max_bytes + 1)
    if len(raw) > max_bytes:
        raise IngestError(name, f"too large when unpacked: {part} is over {max_bytes // 2**20} MB")
    # Word never writes a DTD; one here can only be an entity-expansion attack.
    if b"<!DOCTYPE" in raw or b"<!ENTITY" in raw:
        raise IngestError(name, f"damaged or unsafe Word file ({part} declares a DTD)")
    # Start tags, counted at memchr speed before anything is parsed (comments and processing
    # instructions count too: an upper bound that Word's XML, without CDATA, does not exceed).
    elements = raw.count(b"<") - raw.count(b"</")
    if elements > max_elements:
        raise IngestError(
            name, f"too large when unpacked: {part} holds over {max_elements:,} XML elements (too complex to read)"
        )
    # The text between the tags, measured the same way (a 277 KB .docx can unpack to 95 MB of
    # text in few elements: read in seconds, then hours of chunking and embedding).
    if len(raw) > max_chars:
        chars = len(_TAG.sub(b"", raw).decode("utf-8", "replace"))
        if chars > max_chars:
            raise IngestError(name, too_much_text(chars, max_chars))
    try:
        return ElementTree.fromstring(raw)
    except ElementTree.ParseError as e:
        if e.code == _EXPAT_NO_MEMORY:  # expat's own buffers, under the worker's memory limit
            raise MemoryError(str(e)) from e
        raise IngestError(name, f"damaged Word file ({part}: {e})") from e


def _docx_main_part(zf: zipfile.ZipFile) -> str:
    """The main document part named by _rels/.rels (almost always word/document.xml)."""
    default = "word/document.xml"
    if "_rels/.rels" not in zf.NameToInfo or zf.getinfo("_rels/.rels").file_size > 1 << 20:
        return default
    try:
        rels = ElementTree.fromstring(zf.read("_rels/.rels"))
    except ElementTree.ParseError:
        return default
    for rel in rels:
        if (rel.get("Type") or "").endswith("/officeDocument") and rel.get("Target"):
            return rel.get("Target", "").lstrip("/")
    return default


def _docx_heading_styles(zf: zipfile.ZipFile, name: str) -> dict[str, int]:
    """styleId -> heading level, from style names ('heading 2', 'Title') or outline levels."""
    if "word/styles.xml" not in zf.NameToInfo:
        return {}
    root = _docx_xml(zf, "word/styles.xml", name)
    own: dict[str, int] = {}
    based_on: dict[str, str] = {}
    for style in root:
        if _local(style.tag) != "style" or _attr(style, "type") not in (None, "paragraph"):
            continue
        sid = _attr(style, "styleId") or ""
        name_el, ppr, base = _child(style, "name"), _child(style, "pPr"), _child(style, "basedOn")
        style_name = (_attr(name_el, "val") or "") if name_el is not None else ""
        m = _HEADING_NAME.match(style_name.strip())
        if m:
            own[sid] = int(m.group(1))
        elif style_name.strip().lower() == "title":
            own[sid] = 1
        elif ppr is not None and (lvl := _child(ppr, "outlineLvl")) is not None:
            own[sid] = _outline_level(lvl)
        if base is not None and _attr(base, "val"):
            based_on[sid] = _attr(base, "val") or ""
    levels = dict(own)
    for sid in based_on:
        cur, seen = sid, 0
        while cur not in own and cur in based_on and seen < 10:
            cur, seen = based_on[cur], seen + 1
        if cur in own:
            levels[sid] = own[cur]
    return {k: v for k, v in levels.items() if 1 <= v <= 6}


def _outline_level(el: ElementTree.Element) -> int:
    try:
        return int(_attr(el, "val") or "9") + 1
    except ValueError:
        return 0


def _docx_blocks(parent: ElementTree.Element, styles: dict[str, int]) -> Iterator[Block]:
    """Paragraphs and tables in document order."""
    for el in parent:
        tag = _local(el.tag)
        if tag == "p":
            yield _docx_heading_level(el, styles), _docx_inline(el)
        elif tag == "tbl":
            for row in _docx_find(el, "tr"):
                cells = [_docx_cell_text(cell) for cell in _docx_find(row, "tc")]
                if any(cells):
                    yield None, " | ".join(cells)
        elif tag == "AlternateContent":
            choice = _child(el, "Choice")
            if choice is not None:
                yield from _docx_blocks(choice, styles)
        elif tag in ("sdt", "sdtContent", "customXml", "ins", "moveTo", "smartTag", "body"):
            yield from _docx_blocks(el, styles)


def _docx_find(el: ElementTree.Element, local: str) -> Iterator[ElementTree.Element]:
    """Descendants named ``local`` (rows of this table, cells of this row), looking through
    wrappers such as content controls but not into nested tables."""
    for child in el:
        tag = _local(child.tag)
        if tag == local:
            yield child
        elif tag not in ("tbl", "tr", "tc"):
            yield from _docx_find(child, local)


def _docx_cell_text(cell: ElementTree.Element) -> str:
    props = _child(cell, "tcPr")
    merged = _child(props, "vMerge") if props is not None else None
    if merged is not None and _attr(merged, "val") in (None, "continue"):
        return ""  # Word shows only the first cell of a vertical merge
    return " ".join(tidy(t) for _, t in _docx_blocks(cell, {}) if t.strip())


def _docx_heading_level(p: ElementTree.Element, styles: dict[str, int]) -> int | None:
    ppr = _child(p, "pPr")
    if ppr is None:
        return None
    style = _child(ppr, "pStyle")
    if style is not None and _attr(style, "val") in styles:
        return styles[_attr(style, "val") or ""]
    lvl = _child(ppr, "outlineLvl")
    if lvl is not None and 1 <= _outline_level(lvl) <= 6:
        return _outline_level(lvl)
    return None


# Runs' text, but not deleted revisions, field codes, or the VML copy of a text box.
_DOCX_SKIP = {"pPr", "rPr", "del", "moveFrom", "delText", "instrText", "Fallback", "tblPr", "sectPr"}


def _docx_inline(el: ElementTree.Element) -> str:
    out: list[str] = []

    def walk(node: ElementTree.Element) -> None:
        for child in node:
            tag = _local(child.tag)
            if tag in _DOCX_SKIP:
                continue
            if tag == "t":
                out.append(child.text or "")
            elif tag == "tab":
                out.append("\t")
            elif tag in ("br", "cr"):
                out.append("\n")
            elif tag == "noBreakHyphen":
                out.append("-")
            elif tag == "p":  # a paragraph inside a text box
                out.append("\n")
                walk(child)
                out.append("\n")
            else:
                walk(child)

    walk(el)
    return "".join(out)


def _docx_extras(zf: zipfile.ZipFile, name: str) -> list[tuple[str, list[str]]]:
    """Header/footer text (each distinct line once) and footnotes/endnotes, as extra sections."""
    out: list[tuple[str, list[str]]] = []
    parts = sorted(n for n in zf.namelist() if re.fullmatch(r"word/(header|footer)\d*\.xml", n))
    seen: dict[str, None] = {}
    for part in parts:
        for _, text in _docx_blocks(_docx_xml(zf, part, name), {}):
            text = tidy(text)
            if text:
                seen.setdefault(text, None)
    if seen:
        out.append(("Headers and footers", list(seen)))
    notes: list[str] = []
    for part in ("word/footnotes.xml", "word/endnotes.xml"):
        if part not in zf.NameToInfo:
            continue
        for note in _docx_xml(zf, part, name):
            if _attr(note, "type") in ("separator", "continuationSeparator", "continuationNotice"):
                continue
            text = " ".join(tidy(t) for _, t in _docx_blocks(note, {}) if t.strip())
            if text:
                notes.append(text)
    if notes:
        out.append(("Notes", notes))
    return out
