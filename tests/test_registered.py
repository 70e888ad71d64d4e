"""The securities a filing's cover registers under Section 12(b), read from the cover's table
(``entities.registered``) and answered by the app with the cover as the source
(``chat.registered``). The covers' shapes are real ones: American Express's and 3M's 2022
10-Ks, Coca-Cola's 2017 10-K (no trading symbols, a class broken over two lines), AMD's 2015
10-K (the header in parentheses), Apple's 10-Qs ("—" for no symbol), Amazon's (a rule under
the table), Galaxy Gaming's 10-K in HTML (cells set apart by "|"). The company of the chat test is made up, so no rule can be keyed to one."""

from __future__ import annotations

import glob

import pytest

from rag_core import build_context
from rag_core.chat.registered import COVER_BY, asks_registered
from rag_core.entities.registered import is_debt, registered_classes
from tests.pdfgen import make_columns_pdf

AMEX = """Securities registered pursuant to Section 12(b) of the Act:
Title of each class Trading Symbol(s) Name of each exchange on which registered
Common Shares (par value $0.20 per Share) AXP New York Stock Exchange
Securities registered pursuant to section 12(g) of the Act: None
Indicate by check mark if the registrant is a well-known seasoned issuer, as defined in Rule 405."""

MMM = """Securities registered pursuant to Section 12(b) of the Act:
Title of each class Trading Symbol(s) Name of each exchange on which registered
Common Stock, Par Value $.01 Per Share MMM New York Stock Exchange
MMM Chicago Stock Exchange, Inc.
0.950% Notes due 2023 MMM23 New York Stock Exchange
1.500% Notes due 2026 MMM26 New York Stock Exchange
Note: The common stock of the registrant is also traded on the SIX Swiss Exchange.
Securities registered pursuant to section 12(g) of the Act: None"""

KO = """Securities registered pursuant to Section 12(b) of the Act:
Title of each class Name of each exchange on which registered
Common Stock, $0.
$0.25 Par Value New York Stock Exchange
Floating Rate Notes Due 2019 New York Stock Exchange
1.125% Notes Due 2022 New York Stock Exchange
Securities registered pursuant to Section 12(g) of the Act: None"""

AMD = """Securities registered pursuant to Section 12(b) of the Act:
(Title of each class) (Name of each exchange on which registered)
Common Stock $0.01 par value per share The NASDAQ Stock Market LLC
Securities registered pursuant to Section 12(g) of the Act:
None"""

AAPL = """Securities registered pursuant to Section 12(b) of the Act:
Title of each class Trading symbol(s) Name of each exchange on which registered
Common Stock, $0.00001 par value per share AAPL The Nasdaq Stock Market LLC
1.375% Notes due 2024 — The Nasdaq Stock Market LLC
Indicate by check mark whether the Registrant (1) has filed all reports"""

AMZN = """Securities registered pursuant to Section 12(b) of the Act:
Title of Each Class Trading Symbol Name of Each Exchange on Which Registered
Common Stock, par value $.01 per share AMZN Nasdaq Global Select Market
____________________________________
Indicate by check mark whether the registrant (1) has filed all reports"""


GLXZ = """(Registrant’s telephone number)
Securities registered under Section 12(b) of the Act:
Title of each class | | Trading symbol | | Name of exchange on which registered
Common stock | | GLXZ | | OTCQB marketplace
Indicate by check mark if the registrant is a well-known seasoned issuer, as defined in Rule 405."""

ONE_LINE = (
    "Securities registered pursuant to Section 12(b) of the Act: Title of each class Trading Symbol(s) Name of each "
    "exchange on which registered Common Stock LRK Nasdaq Global Select Market Indicate by check mark if …"
)


@pytest.mark.parametrize(
    ("cover", "classes"),
    [
        (GLXZ, ["Common stock GLXZ"]),
        (ONE_LINE, ["Common Stock LRK"]),
        (AMEX, ["Common Shares (par value $0.20 per Share) AXP"]),
        (
            MMM,
            [
                "Common Stock, Par Value $.01 Per Share MMM MMM",
                "0.950% Notes due 2023 MMM23",
                "1.500% Notes due 2026 MMM26",
            ],
        ),
        (KO, ["Common Stock, $0. $0.25 Par Value", "Floating Rate Notes Due 2019", "1.125% Notes Due 2022"]),
        (AMD, ["Common Stock $0.01 par value per share"]),
        (AAPL, ["Common Stock, $0.00001 par value per share AAPL", "1.375% Notes due 2024"]),
        (AMZN, ["Common Stock, par value $.01 per share AMZN"]),
    ],
)
def test_a_cover_s_registered_classes_are_read_as_it_writes_them(cover, classes):
    assert registered_classes(cover) == classes


def test_debt_is_notes_debentures_or_bonds_and_a_page_without_the_table_lists_nothing():
    assert [is_debt(c) for c in registered_classes(MMM) or []] == [False, True, True]
    assert is_debt("Floating Rate Notes Due 2019") and not is_debt("Common Shares (par value $0.20 per Share)")
    assert registered_classes("Item 5. Market for the Registrant's Common Equity: Nasdaq") is None


def test_what_asks_the_cover_s_classes():
    assert asks_registered(
        "Which debt securities are registered to trade on a national securities exchange under Larkspur's name?"
    )
    assert asks_registered("What securities does Larkspur have registered under Section 12(b) in FY2017?")
    assert asks_registered("Does Larkspur have any debt securities registered on a national securities exchange?")
    assert not asks_registered("Is Larkspur's common stock listed on an exchange?")
    assert not asks_registered("Which trademarks has Larkspur registered?")


def test_the_real_covers_of_five_companies_10_qs(shared_data):
    """The SEC set's 10-Qs, none read when the reader was written: Apple's and Microsoft's notes
    beside their common stock, Amazon's, Intel's and NVIDIA's common stock alone."""
    pypdfium2 = pytest.importorskip("pypdfium2")
    seen = {}
    for path in sorted(glob.glob(str(shared_data / "eval/sec10q/data/v1/docs/2023 Q3 *.pdf"))):
        text = pypdfium2.PdfDocument(path)[0].get_textpage().get_text_range().replace("\r\n", "\n")
        classes = registered_classes(text) or []
        seen[path.rsplit(" ", 1)[-1].removesuffix(".pdf")] = (len(classes), sum(map(is_debt, classes)))
    assert seen == {"AAPL": (10, 9), "AMZN": (1, 0), "INTC": (1, 0), "MSFT": (3, 2), "NVDA": (1, 0)}


def _filing(make_settings, llm, tmp_path, table: list[str]):
    ctx = build_context(make_settings(), llm=llm)
    cover = [
        "FORM 10-K",
        "LARKSPUR HOLDINGS, INC.",
        "(Exact name of registrant as specified in its charter)",
        "Securities registered pursuant to Section 12(b) of the Act:",
        "Title of each class Trading Symbol(s) Name of each exchange on which registered",
        *table,
        "Securities registered pursuant to Section 12(g) of the Act: None",
        "Indicate by check mark if the registrant is a well-known seasoned issuer.",
    ]
    prose = [f"Larkspur Holdings funds its games with debt securities and loans, note {i}." for i in range(8)]
    make_columns_pdf([(cover, []), (prose, [])], tmp_path / "larkspur-10k.pdf")
    ctx.ingestion.ingest_paths([tmp_path / "larkspur-10k.pdf"])
    return ctx


QUESTION = "Which debt securities are registered to trade on a national securities exchange under Larkspur's name?"


def test_asked_which_debt_is_registered_the_cover_answers_with_no_model(make_settings, llm, tmp_path):
    ctx = _filing(
        make_settings,
        llm,
        tmp_path,
        ["Common Stock, $0.01 par value LRK Nasdaq Global Select Market", "2.250% Notes due 2031 LRK31 Nasdaq"],
    )
    asked = len(llm.chats)
    turn = ctx.chat.ask(QUESTION)
    assert len(llm.chats) == asked and turn.served_by["llm"] == COVER_BY
    assert turn.answer.startswith("1 debt security is registered under Section 12(b)")
    assert "- 2.250% Notes due 2031 LRK31" in turn.answer and "Common Stock" not in turn.answer
    assert (turn.sources[0]["file"], turn.sources[0]["page"]) == ("larkspur-10k.pdf", 1)  # the cover, cited [1]
    assert turn.answer.endswith("[1]")
    asked = ctx.chat.ask("Does Larkspur have any debt securities registered on an exchange?")
    assert asked.answer.startswith("Yes: 1 debt security is registered under Section 12(b)")


def test_a_cover_registering_no_debt_answers_none(make_settings, llm, tmp_path):
    ctx = _filing(
        make_settings, llm, tmp_path, ["Common Shares (par value $0.20 per Share) LRK New York Stock Exchange"]
    )
    turn = ctx.chat.ask(QUESTION)
    assert turn.answer.startswith("None: the filing's cover (page 1) registers no debt")
    assert "Common Shares (par value $0.20 per Share) LRK" in turn.answer
    asked = ctx.chat.ask("Does Larkspur have debt securities registered on a national securities exchange?")
    assert asked.answer.startswith("No: the filing's cover (page 1) registers no debt")


def test_a_library_without_such_a_cover_is_answered_by_the_model(ctx, llm, tmp_path):
    (tmp_path / "notes.md").write_text("# Larkspur\n\nLarkspur Holdings funds its games with notes due 2031.\n")
    ctx.ingestion.ingest_paths([tmp_path / "notes.md"])
    llm.script(answers=["Notes due 2031 [1]."])
    asked = len(llm.chats)
    turn = ctx.chat.ask(QUESTION)
    assert len(llm.chats) == asked + 1 and turn.served_by["llm"] != COVER_BY


def test_a_follow_up_rewritten_to_ask_it_is_answered_from_the_cover(make_settings, llm, tmp_path):
    ctx = _filing(make_settings, llm, tmp_path, ["Common Stock LRK Nasdaq", "4.000% Notes due 2040 LRK40 Nasdaq"])
    sid = ctx.sessions.create("covers").id
    first = ctx.chat.ask("Which securities has Larkspur registered on an exchange?", sid)
    assert first.answer.startswith("Registered under Section 12(b)") and "- Common Stock LRK" in first.answer
    llm.script(condense=["Which of Larkspur's debt securities are registered on an exchange?"])
    turn = ctx.chat.ask("And which of them are debt?", sid)
    assert turn.condensed_question.startswith("Which of Larkspur's debt securities")
    assert turn.answer.startswith("1 debt security is registered") and "4.000% Notes due 2040 LRK40" in turn.answer


def test_a_session_that_searches_other_documents_reads_no_cover_outside_them(make_settings, llm, tmp_path):
    ctx = _filing(make_settings, llm, tmp_path, ["Common Stock LRK Nasdaq", "4.000% Notes due 2040 LRK40 Nasdaq"])
    (tmp_path / "memo.md").write_text(
        "# Larkspur memo\n\nLarkspur's debt securities are notes registered on an exchange.\n"
    )
    ctx.ingestion.ingest_paths([tmp_path / "memo.md"])
    sid = ctx.sessions.create("memo only").id
    ctx.sessions.set_doc_filter(sid, ["memo.md"])
    llm.script(answers=["Notes [1]."])
    turn = ctx.chat.ask(QUESTION, sid)
    assert turn.served_by["llm"] != COVER_BY and {s["file"] for s in turn.sources} == {"memo.md"}
