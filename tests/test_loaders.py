import codecs

import pytest

from rag_core.errors import IngestError
from rag_core.loaders import decode_text, load_file
from tests.pdfgen import ZEPHYR_PAGES, encrypt_pdf, make_pdf


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (codecs.BOM_UTF8 + "café".encode(), "café"),
        ("héllo wörld".encode("utf-16"), "héllo wörld"),
        ("héllo wörld".encode("utf-16-be"), "héllo wörld"),
        ("héllo wörld".encode("utf-32"), "héllo wörld"),
        ("中文文本，测试编码。".encode("gb18030"), "中文文本，测试编码。"),
        ("Grüße aus Köln".encode("cp1252"), "Grüße aus Köln"),
        (b"plain ascii", "plain ascii"),
    ],
)
def test_encodings_are_detected(data, expected):
    assert decode_text(data, "x.txt") == expected


def _mojibake(text: str) -> bytes:
    """``text`` as a tool that read UTF-8 as Latin-1 and saved it again as UTF-8 writes it."""
    return text.encode("utf-8").decode("latin-1").encode("utf-8")


def test_mojibake_in_a_text_file_is_repaired_and_a_figures_row_reads_as_written(tmp_path):
    row = "1997–2004 Norwich City 278 (84)\n2004–2005 Gillingham 20 (3)\nHe said “café” in Köln."
    p = tmp_path / "career.txt"
    p.write_bytes(_mojibake(row))
    assert "â" in p.read_bytes().decode("utf-8")  # what the file holds: the dash as three letters
    assert load_file(p, "career.txt", "sha").documents[0].text == row


@pytest.mark.parametrize(
    "text",
    [
        "Grüße aus Köln — “quoted” – dashes… and â, Ã, Â on their own: Âge, Ãle.",
        "Всеобщая декларация прав человека; 人人生而自由；Ελληνικά; עברית; हिन्दी",
        "Prices: 5 € · 10 £ · naïve façade, ½ × ¾ ≈ 0.4",
    ],
)
def test_text_that_is_not_mojibake_is_left_exactly_as_it_is(text):
    assert decode_text(text.encode("utf-8"), "x.txt") == text
    assert decode_text(text.encode("utf-16"), "x.txt") == text


def test_mojibake_in_an_html_page_that_declares_its_charset_is_repaired_too():
    from rag_core.loaders import decode_html

    page = '<html><head><meta charset="utf-8"></head><body><p>1997–2004 Norwich City 278 (84)</p></body></html>'
    assert "1997–2004 Norwich City" in decode_html(_mojibake(page), "career.html")


def test_pdf_gives_one_document_per_page_with_page_numbers(tmp_path):
    p = tmp_path / "z.pdf"
    make_pdf(ZEPHYR_PAGES, p)
    loaded = load_file(p, "z.pdf", "sha")
    assert [d.metadata["page"] for d in loaded.documents] == [1, 2, 3]
    assert "42 litres" in loaded.documents[1].text
    assert loaded.documents[1].id_ == "z.pdf::p0002"


def test_markdown_is_split_on_headings(tmp_path):
    p = tmp_path / "notes.md"
    p.write_text("# Title\nintro\n## Setup\nrun it\n```\n# not a heading\n```\n## Usage\nuse it\n", encoding="utf-8")
    docs = load_file(p, "notes.md", "sha").documents
    assert [d.metadata.get("heading") for d in docs] == ["Title", "Title > Setup", "Title > Usage"]
    assert "# not a heading" in docs[1].text


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        ("empty.txt", b"", "empty file"),
        ("blank.md", b"  \n\t \n", "empty file"),
        ("book.epub", b"PK\x03\x04 not really", "unsupported type .epub"),
        ("noext", b"hello", "unsupported type (no extension)"),
        ("broken.pdf", b"%PDF-1.4\n garbage garbage garbage", "damaged PDF"),
        ("fake.pdf", b"this is not a pdf at all", "not a PDF"),
        ("scan.pdf", make_pdf(["", ""]), "no text layer"),
        ("locked.pdf", encrypt_pdf(make_pdf(["secret page"]), "pw"), "encrypted: needs a password"),
    ],
)
def test_bad_files_are_refused_with_a_reason(tmp_path, name, data, reason):
    p = tmp_path / "f"
    p.write_bytes(data)
    with pytest.raises(IngestError) as e:
        load_file(p, name, "sha")
    assert e.value.file == name
    assert reason in e.value.reason


def test_pdf_encrypted_with_empty_password_is_read(tmp_path):
    p = tmp_path / "open.pdf"
    p.write_bytes(encrypt_pdf(make_pdf(ZEPHYR_PAGES), ""))
    assert len(load_file(p, "open.pdf", "sha").documents) == 3


def test_a_very_long_text_is_split_into_parts_the_sentence_splitter_can_take(tmp_path):
    """A 10 MB novel in one Document made the sentence splitter's regex time out."""
    paragraph = "It was the best of times, it was the worst of times. " * 40
    path = tmp_path / "novel.txt"
    path.write_text("\n\n".join(f"Chapter {i}. {paragraph}" for i in range(200)), encoding="utf-8")
    loaded = load_file(path, "novel.txt", "sha")
    assert len(loaded.documents) > 1 and all(len(d.text) <= 100_000 for d in loaded.documents)
    assert [d.id_ for d in loaded.documents[:2]] == ["novel.txt::text.01", "novel.txt::text.02"]
    assert "".join(d.text for d in loaded.documents) == path.read_text(encoding="utf-8")
    assert all(d.text.startswith("Chapter") for d in loaded.documents)  # cut at paragraph ends
    short = tmp_path / "short.txt"
    short.write_text("A short note.", encoding="utf-8")
    assert [d.id_ for d in load_file(short, "short.txt", "sha").documents] == ["short.txt::text"]


def test_a_filing_that_sets_its_words_apart_with_no_break_spaces_is_read_with_spaces(shared_data):
    # Corning's 2020 and 2021 10-Ks and CVS Health's 2018 10-K write U+00A0 between every two words:
    # a name, a period or a row label written with a space would match none of their text
    path = shared_data / "eval" / "financebench" / "pdfs" / "CORNING_2020_10K.pdf"
    loaded = load_file(path, path.name, "x")
    text = "\n".join(d.text for d in loaded.documents)
    assert "\u00a0" not in text
    assert "Corning Incorporated" in text and "Consolidated Statements of Income" in text
