"""A whole folder in one go: every file ends indexed or refused with a reason a person
understands, one file's failure never stops the others, and the index is consistent after.

``test_shared_corpus_file_by_file`` runs the 118 real files in ../shared/data/corpus (skipped
when absent); ``test_generated_folder_file_by_file`` runs the same kinds of trouble built here.
"""

import codecs
import json
import logging
import os
import subprocess
import sys
import time
import unicodedata
from pathlib import Path

import pytest

from rag_core import build_context
from rag_core.health import check
from rag_core.loaders import SUPPORTED_LABEL
from tests.pdfgen import ZEPHYR_PAGES, encrypt_pdf, make_pdf, make_scanned_pdf
from tests.test_formats import make_docx, make_image_pdf, para, table

ROOT = Path(__file__).resolve().parents[1]

# What a person may be told when a file is refused. Anything else (a traceback, "unexpected
# error: ...") fails the test.
KNOWN_REASONS = (
    "empty file",
    "unsupported type ",
    "binary file, not text",
    "encrypted: needs a password",
    "no text layer: ",
    "no text: ",
    "damaged PDF that cannot be read",
    "damaged Word file",
    "not a PDF",
    "not a Word .docx file",
    "not a Word document",
    "not a .",
    "old Word .doc format",
    "too large",
)

NO_TEXT_FOUND = "no text layer: OCR found no text on its"
ENCRYPTED = "encrypted: needs a password"

# Every file of ../shared/data/corpus that is refused, and the reason it must be given.
CORPUS_REFUSED = {
    "docs/empty.txt": "empty file",
    "docs/fake-text-all-whitespace.txt": "empty file",
    "docs/fake-doc.rtf": "unsupported type .rtf",
    "docs/fake.odt": "unsupported type .odt",
    "docs/simple.doc": f"unsupported type .doc (supported: {SUPPORTED_LABEL}; old Word format",
    "docs/winter-sports.epub": "unsupported type .epub",
    "docs/img/chi_sim_image.jpeg": "unsupported type .jpeg",
    "docs/img/jpn-vert.jpeg": "unsupported type .jpeg",
    "pdfs/manifest.jsonl": "unsupported type .jsonl",
    "pdfs/_provenance/samplefiles_files.json": "unsupported type .json",
    "pdfs/encrypted/pdfminer__aes-256-r6.pdf": ENCRYPTED,
    "pdfs/encrypted/pypdf__crazyones-encrypted-256.pdf": ENCRYPTED,
    "pdfs/encrypted/pypdf__r2-user-password.pdf": ENCRYPTED,
    "pdfs/encrypted/pypdf__r3-user-password.pdf": ENCRYPTED,
    "pdfs/encrypted/pypdf__r4-aes-user-password.pdf": ENCRYPTED,
    "pdfs/encrypted/pypdf__r5-user-password.pdf": ENCRYPTED,
    "pdfs/encrypted/pypdf__r6-user-password.pdf": ENCRYPTED,
    "pdfs/encrypted/samplefiles__libreoffice-writer-password.pdf": ENCRYPTED,
    "pdfs/encrypted/unstructured__password.pdf": ENCRYPTED,
    "pdfs/encrypted/pdfjs__empty_protected.pdf": "no text layer: the page is blank",
    "pdfs/malformed/pdfjs__empty.pdf": "no text layer: the page is blank",
    "pdfs/malformed/samplefiles__unreadablemetadata.pdf": "damaged PDF that cannot be read (PDFium: Data format error)",
    # Read by OCR and found to hold no text: 3 pt pages with 1 and 16 pixel images.
    "pdfs/scanned_or_image_only/pdfjs__issue11878_reduced.pdf": NO_TEXT_FOUND + " 10 image-only pages",
    "pdfs/scanned_or_image_only/samplefiles__imagemagick-CCITTFaxDecode.pdf": NO_TEXT_FOUND + " 1 image-only page",
    "pdfs/scanned_or_image_only/samplefiles__imagemagick-images.pdf": NO_TEXT_FOUND + " 6 image-only pages",
}

# Text that must be found in a document's chunks: proof that it was read, not just accepted.
CORPUS_TEXT = {
    "docs/fake-html-cp1252.html": "Die schöne Frau hat einen Kaffee",
    "docs/example-steelJIS-datasheet-utf-16.html": "SNB22-3 Chemical composition",
    "docs/example-with-scripts.html": "Russian Offensive Campaign Assessment",
    "docs/docx-tables.docx": "Header Col 1 | Header Col 2",
    "docs/docx-hdrftr.docx": "First header para",
    "docs/handbook-872p.docx": "The United States Trustee appoints and supervises standing trustees",
    "docs/umlauts-non-utf8.md": "können",
    "docs/fake-text-utf-16-be.txt": "This is a test document to use for unit tests.",
    "docs/fake-text-utf-32.txt": "This is a test document to use for unit tests.",
    "docs/book-war-and-peace-1225p.txt": "Well, Prince, so Genoa and Lucca are now just family estates",
    "pdfs/encrypted/pypdf__r6-empty-password.pdf": "pdf encryption test",
    "pdfs/cjk/pdfjs__XiaoBiaoSong.pdf": "中",
    "pdfs/malformed/pdfjs__Pages-tree-refs.pdf": "Testcase: ’Pages loop’",
    # scans read by OCR (rows of a table kept as rows)
    "pdfs/scanned_or_image_only/pdfminer__175.pdf": "Oversize Tire Accessory Kit",
    "pdfs/scanned_or_image_only/unstructured__loremipsum-flat.pdf": "Lorem ipsum dolor sit amet",
    "pdfs/scanned_or_image_only/unstructured__single_table.pdf": "Base 128 64,058 800.73 (484.11) N/A",
}


def run_cli(data_dir: Path, *args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    env = {**os.environ, "DOCENT_EMBED_PROVIDER": "hash", "DOCENT_LLM_PROVIDER": "extractive"}
    return subprocess.run(
        [sys.executable, "-m", "rag_core", "--data-dir", str(data_dir), *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def every_file(folder: Path) -> set[str]:
    """What ``ingest FOLDER`` is given: all files, minus hidden ones (.DS_Store, .git/...)."""
    out = set()
    for f in folder.rglob("*"):
        rel = f.relative_to(folder)
        if f.is_file() and not any(part.startswith(".") for part in rel.parts):
            out.add(unicodedata.normalize("NFC", rel.as_posix()))
    return out


def assert_refusals_are_specific(results: dict) -> None:
    for name, r in results.items():
        assert r.status in ("indexed", "failed"), (name, r.status)
        if r.status == "failed":
            assert r.reason.startswith(KNOWN_REASONS), f"{name}: unclear reason {r.reason!r}"
            assert "unexpected" not in r.reason and "Traceback" not in r.reason
        else:
            assert r.chunks > 0 and not r.reason, (name, r)


def assert_consistent(ctx, data_dir: Path, indexed: set[str]) -> None:
    problems, summary = check(ctx)
    assert problems == []
    assert {d.name for d in ctx.ingestion.documents()} == indexed
    assert summary["documents"] == len(indexed)
    cli = run_cli(data_dir, "check", "--json")
    assert cli.returncode == 0, cli.stdout + cli.stderr
    assert json.loads(cli.stdout)["ok"] is True


def text_of(ctx, name: str) -> str:
    return "\n".join(n.get_content() for n in ctx.index.all_nodes([name]))


# --------------------------------------------------------------------------- the real corpus
@pytest.mark.shared
@pytest.mark.slow  # 113 files, among them a 619-page PDF and a 1225-page book
@pytest.mark.timeout(900)  # OCR of the scans: ~30 pages, a few seconds each on an idle machine, more under load
def test_shared_corpus_file_by_file(shared_data, make_settings, caplog):
    corpus = shared_data / "corpus"
    if not corpus.is_dir():
        pytest.skip(f"{corpus} not found")
    settings = make_settings()
    ctx = build_context(settings)
    caplog.set_level(logging.WARNING)

    started = time.perf_counter()
    results = {r.file: r for r in ctx.ingestion.ingest_paths([corpus])}
    elapsed = time.perf_counter() - started

    # Nothing lost: one result per file, and each is indexed or refused with a known reason.
    assert set(results) == every_file(corpus)
    assert_refusals_are_specific(results)
    for name, r in sorted(results.items()):
        if name in CORPUS_REFUSED:
            assert (r.status, r.reason[: len(CORPUS_REFUSED[name])]) == ("failed", CORPUS_REFUSED[name]), name
        elif name in every_file(corpus):
            assert r.status == "indexed", f"{name}: {r.reason}"

    # The manifest's facts about each PDF agree with what Docent made of it.
    manifest = [json.loads(line) for line in (corpus / "pdfs" / "manifest.jsonl").read_text().splitlines() if line]
    for entry in manifest:
        r = results[f"pdfs/{entry['file']}"]
        if entry["needs_password"]:
            assert r.reason == ENCRYPTED, entry["file"]
        elif r.status == "indexed":
            assert r.pages == entry["pages"], entry["file"]
        if entry["pages"] and entry["image_only_pages_first30"] == entry["pages"]:  # a scan: OCR reads it all
            assert r.ocr_pages == entry["pages"] or r.reason.startswith(NO_TEXT_FOUND), entry["file"]
    assert results["pdfs/large_page_count/unstructured__DA-619p.pdf"].pages == 619
    assert results["pdfs/malformed/pdfjs__Pages-tree-refs.pdf"].warnings == ["skipped 1 damaged page of 2: page 2"]
    assert results["docs/book-war-and-peace-1225p.txt"].chunks > 3000

    for name, expected in CORPUS_TEXT.items():
        assert expected in text_of(ctx, name), name
    html = text_of(ctx, "docs/example-with-scripts.html")
    assert "switchTo5x" not in html and "@import url" not in html  # script and style dropped

    # No traceback was logged: every failure above was expected and explained.
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text

    indexed = {n for n, r in results.items() if r.status == "indexed"}
    assert_consistent(ctx, settings.data_dir, indexed)
    print(f"\ncorpus: {len(results)} files, {len(indexed)} indexed, in {elapsed:.1f} s")


# --------------------------------------------------------------------------- generated cases
def build_folder(root: Path) -> dict[str, tuple[str, str]]:
    """Write a folder of troublesome files; returns name -> (status, reason or text to find)."""
    root.mkdir(parents=True)
    expected: dict[str, tuple[str, str]] = {}

    def put(name: str, data: bytes, status: str, detail: str) -> None:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        expected[unicodedata.normalize("NFC", name)] = (status, detail)

    report = make_pdf(ZEPHYR_PAGES)
    put("report.pdf", report, "indexed", "42 litres per minute")
    put("copy of report.pdf", report, "indexed", "42 litres per minute")  # same bytes, another name
    put("scanned.pdf", make_image_pdf(["", ""]), "failed", "no text layer: OCR found no text on its 2 image-only pages")
    put("scan.pdf", make_scanned_pdf(["Pump curve: 30 litres at 5 metres."]), "indexed", "Pump curve: 30 litres")
    put("blank.pdf", make_pdf(["", ""]), "failed", "no text layer: all 2 pages are blank")
    put("half-scanned.pdf", make_image_pdf(["Pump curve: 30 litres at 5 metres.", ""]), "indexed", "Pump curve")
    put("locked.pdf", encrypt_pdf(report, "asdfzxcv"), "failed", ENCRYPTED)
    put("empty-password.pdf", encrypt_pdf(report, ""), "indexed", "12 volt battery")
    put("damaged.pdf", b"%PDF-1.4\n1 0 obj << /Type /Catalog", "failed", "damaged PDF that cannot be read")
    put("word-named.pdf", make_docx(para("hi")), "failed", "not a PDF: it is a ZIP archive")
    put("manual.docx", make_docx(para("Manual", "Heading1") + table([["Part", "Torque"], ["Bolt", "12 Nm"]])),
        "indexed", "Bolt | 12 Nm")  # fmt: skip
    ole = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 64
    put("protected.docx", ole + "EncryptedPackage".encode("utf-16-le"), "failed", ENCRYPTED)
    put("legacy.docx", ole, "failed", "old Word .doc format with a .docx name")
    put(
        "page.html", "<h1>Köln</h1><p>Grüße, 15 €</p><script>evil()</script>".encode("cp1252"), "indexed", "Grüße, 15 €"
    )
    put("page16.htm", codecs.BOM_UTF16_LE + "<p>Ünïcode page</p>".encode("utf-16-le"), "indexed", "Ünïcode page")
    put("utf16.txt", "Wörter in UTF-16".encode("utf-16"), "indexed", "Wörter in UTF-16")
    put("utf16-no-bom.txt", "Wörter ohne BOM".encode("utf-16-le"), "indexed", "Wörter ohne BOM")
    put("utf32.txt", "Wörter in UTF-32".encode("utf-32"), "indexed", "Wörter in UTF-32")
    put("latin1.md", "# Köln\nDom und Rhein.\n".encode("cp1252"), "indexed", "Dom und Rhein")
    put("empty.txt", b"", "failed", "empty file")
    put("whitespace.md", b" \r\n\t \n", "failed", "empty file")
    put("pdf-named.txt", report, "failed", "not a .txt text file: it is a PDF")
    put("binary.txt", bytes(range(256)) * 8, "failed", "binary file, not text")
    for name in ("old.doc", "book.epub", "notes.odt", "letter.rtf", "photo.jpeg", "README"):
        ext = Path(name).suffix or "(no extension)"
        put(name, b"PK\x03\x04 whatever", "failed", f"unsupported type {ext}")
    put("a/same.txt", b"alpha folder text", "indexed", "alpha")  # same file name, two folders
    put("b/same.txt", b"beta folder text", "indexed", "beta")
    put("cafe\u0301 notes.txt", b"decomposed accent in the name", "indexed", "decomposed")  # NFD on disk
    put("\u062a\u0642\u0631\u064a\u0631 \U0001f4c4.md", "# تقرير\nنص عربي".encode(), "indexed", "نص عربي")
    put("huge.txt", b"word " * 250_000, "failed", "too large: 1.2 MB (limit 1 MB)")
    put(".DS_Store", b"\0\0\0\1Bud1", "hidden", "")  # hidden files are not documents
    return expected


def test_generated_folder_file_by_file(make_settings, tmp_path, caplog):
    folder = tmp_path / "in"
    expected = build_folder(folder)
    ctx = build_context(make_settings(max_file_mb=1))
    caplog.set_level(logging.WARNING)

    results = {r.file: r for r in ctx.ingestion.ingest_paths([folder])}

    expected = {k: v for k, v in expected.items() if v[0] != "hidden"}
    assert set(results) == set(expected) == every_file(folder)
    assert_refusals_are_specific(results)
    for name, (status, detail) in expected.items():
        r = results[name]
        assert r.status == status, f"{name}: {r.status} {r.reason}"
        if status == "failed":
            assert r.reason.startswith(detail), f"{name}: {r.reason!r}"
        else:
            assert detail in text_of(ctx, name), name
    assert "café notes.txt" in results  # names are NFC, as a person types them
    assert results["half-scanned.pdf"].warnings == [
        "OCR found no text on 1 page of 2 without a text layer (scanned?): page 2"
    ]
    assert (results["scan.pdf"].ocr_pages, results["scan.pdf"].warnings) == (
        1,
        ["read 1 scanned page of 1 by OCR: page 1"],
    )
    assert any(
        "same content as" in w for r in (results["report.pdf"], results["copy of report.pdf"]) for w in r.warnings
    )
    assert "evil()" not in text_of(ctx, "page.html")
    assert ctx.chat.retrieve("torque of the bolt", top_k=1)[0]["file"] == "manual.docx"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text

    indexed = {n for n, r in results.items() if r.status == "indexed"}
    assert_consistent(ctx, ctx.settings.data_dir, indexed)

    # The same folder again: nothing re-embedded, every refusal repeated word for word.
    again = {r.file: r for r in ctx.ingestion.ingest_paths([folder])}
    assert {n for n, r in again.items() if r.status == "skipped"} == indexed
    assert {n: r.reason for n, r in again.items() if r.status == "failed"} == {
        n: r.reason for n, r in results.items() if r.status == "failed"
    }


# --------------------------------------------------------------------------- names
def test_names_have_one_defined_identity(ctx, tmp_path):
    """The name is the document's identity (re-uploading it updates it), so a name must mean
    one thing: as a person reads it, and storable as a file."""
    upload = ctx.ingestion.ingest_bytes
    # Unicode spellings a person cannot tell apart are one document (macOS sends NFD).
    first = upload(b"first", "cafe\u0301.txt")
    assert (first.file, upload(b"second", "café.txt", on_conflict="replace").status) == ("café.txt", "replaced")
    # Control and bidi-override characters are dropped: "invoice\u202etxt.exe" would display reversed.
    assert upload(b"x", "invoice\u202egnp.txt").file == "invoicegnp.txt"
    assert upload(b"x", "line\nbreak\t.md").file == "linebreak.md"
    # An upload's name with path separators keeps only its last part.
    assert upload(b"x", "C:\\Users\\me\\Desktop\\plan.txt").file == "plan.txt"
    assert upload(b"x", "/etc/../secrets/plan2.txt").file == "plan2.txt"
    # A name too long for the file system (Windows allows 255 characters, Linux 255 bytes) fits,
    # keeps its extension, and two such names stay two documents.
    long_names = [upload(b"report " + tail.encode(), "年度报告" * 30 + tail + ".txt") for tail in ("一", "二")]
    assert [r.status for r in long_names] == ["indexed", "indexed"]
    assert len({r.file for r in long_names}) == 2
    for r in long_names:
        assert r.file.endswith(".txt") and len(r.file.encode()) <= 200
        assert (ctx.settings.data_dir / "files" / r.file).is_file()
    # Two files with the same name given one by one: the same name, so the second is a conflict
    # until told to replace (given as a folder, their relative paths keep them apart:
    # test_ingestion.py).
    for folder, text in (("a", "alpha"), ("b", "beta")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "x.txt").write_text(f"{text} text")
    results = ctx.ingestion.ingest_paths([tmp_path / "a" / "x.txt", tmp_path / "b" / "x.txt"])
    assert [(r.file, r.status, r.conflict) for r in results] == [("x.txt", "indexed", False), ("x.txt", "failed", True)]
    assert text_of(ctx, "x.txt") == "alpha text"
    again = ctx.ingestion.ingest_file(tmp_path / "b" / "x.txt", on_conflict="replace")
    assert (again.file, again.status) == ("x.txt", "replaced")
    assert text_of(ctx, "x.txt") == "beta text"
    assert check(ctx)[0] == []
