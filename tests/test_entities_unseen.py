"""Names and periods as analysts write them, read the way the filings themselves write them.

Each rule here was seen in real filings of two or more companies (FinanceBench's tune half,
``../shared/data/eval/financebench``), and the test's text is shaped like theirs: the covers
of 3M's and Coca-Cola's 10-Ks, Corning's and 3M's trading-symbol tables, American Express's
"Amex" and Advanced Micro Devices' "AMD" written through their filings."""

from __future__ import annotations

import pytest

from rag_core.entities import Entities, decide, question_names, read_profile
from rag_core.figures.periods import agree, period_of
from rag_core.text import is_period_token

NBSP = "\u00a0"


@pytest.fixture
def filing_words(ctx, tmp_path):
    """The keyword index of a short filing-like text: what ``names_in`` reads names against."""
    (tmp_path / "corning.txt").write_text("Corning Incorporated. Cost of sales 7,772. Accounts payable 1,174.")
    ctx.ingestion.ingest_paths([tmp_path / "corning.txt"])
    return ctx.chat.components.keywords.get(None)


def _pages(pages: list[str]) -> list[tuple[int, str]]:
    return [(i + 1, text) for i, text in enumerate(pages)]


def test_a_period_as_analysts_write_it_is_no_name():
    # "no indexed document names FY2024" refused a question whose filing writes "fiscal 2024"
    for q in ("What is the FY2018 capital expenditure amount for 3M?", "What was Q2 FY2024 revenue?"):
        assert all(not any(is_period_token(t) for t in n.terms) for n in question_names(q))
    assert [n.text for n in question_names("What is the FY2018 capital expenditure amount for 3M?")] == ["3M"]
    assert is_period_token("fy2023") and is_period_token("2q23") and not is_period_token("amex")


def test_an_analyst_s_abbreviation_of_a_measure_is_no_name(filing_words):
    # "The documents found don't mention FY2020 COGS": Corning's filing writes "Cost of sales"
    questions = (
        "What is FY2020 DPO for Corning? DPO is defined as: 365 * (average accounts payable) / (FY2020 COGS).",
        "What is the year end FY2018 net PPNE for 3M?",
        "What is the FY2017 ROA for Coca Cola?",
        "What is American Water Works's FY2021 unadjusted EBITDA?",
    )
    measures = {"cogs", "cog", "dpo", "ppne", "roa", "ebitda"}
    for q in questions:
        assert question_names(q) and not {t for n in question_names(q) for t in n.terms} & measures, q
        assert not {t for _, terms in filing_words.names_in(q) for t in terms} & measures
    assert [terms for _, terms in filing_words.names_in(questions[0])] == [["corning"]]  # the company stays a name


def test_a_currency_code_is_no_name(filing_words):
    # "The documents found don't mention USD: the answer is about the rest." beside a right answer
    # (the app asked "… FY2021 unadjusted EBITDA in USD millions?" of American Water Works' 10-K;
    # 3M's and Activision Blizzard's questions write "in USD billions", "in USD millions" too)
    for q in (
        "What is the year end FY2018 net PPNE for 3M? Answer in USD billions.",
        "What is the FY2019 capital expenditure amount (in USD millions) for Corning?",
    ):
        assert not {t for n in question_names(q) for t in n.terms} & {"usd"}, q
        assert not {t for _, terms in filing_words.names_in(q) for t in terms} & {"usd"}, q
    assert [n.text for n in question_names("How much did Corning pay in USD?")] == ["Corning"]


def test_a_name_with_an_ampersand_or_a_leading_number_is_one_name():
    assert [n.terms for n in question_names("What was Procter & Gamble's FY2023 revenue?")] == [("procter", "gamble")]
    assert [n.text for n in question_names("Was 3M's revenue up in 2022?")] == ["3M"]
    assert question_names("See the 10-K and the 8K.") == []  # forms, not names


# A cover whose name is a logo (Coca-Cola's 10-K) or set under the file number without the
# "(Exact name of registrant…)" line (3M's 10-Ks); the name runs through the filing.
def _filing(cover: str, name: str, pages: int = 12) -> list[str]:
    body = [f"{name} and its subsidiaries reported results. The segment grew {i} percent." for i in range(pages)]
    return [cover, *body]


def test_a_filing_whose_cover_does_not_write_its_name_is_about_the_registrant_its_pages_name():
    coke = (
        "UNITED STATES\nSECURITIES AND EXCHANGE COMMISSION\nFORM 10-K\nFor the fiscal year ended December 31, 2017\n"
        "Commission File Number 001-02217\n(Exact name of Registrant as specified in its charter)\nDelaware\n"
        "One Coca-Cola Plaza, Atlanta, Georgia"
    )
    profile = read_profile("COCACOLA_2017_10K.pdf", _pages(_filing(coke, "The Coca-Cola Company")))
    assert [s.name for s in profile.subjects] == ["The Coca-Cola Company"]
    three_m = (
        "UNITED STATES\nSECURITIES AND EXCHANGE COMMISSION\nFORM 10-K\nFor the fiscal year ended December 31, 2018\n"
        "Commission file number 1-3285\n3M COMPANY\nState of Incorporation: Delaware\n"
        f"Title of each class Trading{NBSP}Symbol(s) Name of each exchange on which registered\n"
        "Common Stock, Par Value $.01 Per Share MMM New York Stock Exchange"
    )
    profile = read_profile("3M_2018_10K.pdf", _pages(_filing(three_m, "3M Company")))
    assert profile.subjects[0].aliases[0] == ["3m"] and profile.subjects[0].tickers == ["mmm"]


def test_a_ticker_under_a_header_with_a_no_break_space_is_read():
    corning = (
        "FORM 10-K\nCommission file number: 1-3247\nCORNING INCORPORATED\n"
        "(Exact name of registrant as specified in its charter)\n"
        f"Title of each class Trading{NBSP}Symbol(s) Name of each exchange on which registered\n"
        "Common Stock GLW New York Stock Exchange (NYSE)"
    )
    profile = read_profile("CORNING_2020_10K.pdf", _pages(_filing(corning, "Corning Incorporated")))
    assert profile.subjects[0].tickers == ["glw"]


def test_a_cover_set_with_no_break_spaces_names_its_registrant():
    # CVS Health's 2018 10-K sets every word of its cover apart with a no-break space; a registrant
    # not read leaves the filing about nothing, and every company's question searched it too
    cover = NBSP.join(
        "FORM 10-K\nCommission file number 001-01011\nCVS HEALTH CORPORATION\n"
        "(Exact name of registrant as specified in its charter)\nDelaware".split(" ")
    )
    pages = [NBSP.join(page.split(" ")) for page in _filing(cover, "CVS Health Corporation")]  # its pages too
    profile = read_profile("CVSHEALTH_2018_10K.pdf", _pages(pages))
    assert [s.name for s in profile.subjects] == ["CVS Health Corporation"]
    assert profile.subjects[0].aliases[0] == ["cvs", "health"]


class _Keywords:
    def __init__(self, doc_terms: dict[str, set[str]]) -> None:
        self.doc_terms = doc_terms

    def mentions(self, docs: set[str], terms: list[str]) -> bool:
        return any(set(terms) <= self.doc_terms.get(d, set()) for d in docs)


def _library() -> tuple[Entities, _Keywords]:
    amex = (
        "FORM 10-K\nAMERICAN EXPRESS COMPANY\n(Exact name of registrant as specified in its charter)\n"
        "Title of each class Trading Symbol(s)\nCommon Shares AXP New York Stock Exchange"
    )
    amd = "FORM 10-K\nADVANCED MICRO DEVICES, INC.\n(Exact name of registrant as specified in its charter)"
    amex_pages = [amex, *(f"Card Member spending on Amex cards rose {i} percent in the year." for i in range(8))]
    amd_pages = [amd, *(f"Sales of AMD processors rose {i} percent in the year." for i in range(8))]
    known = Entities(
        {
            "AMEX.pdf": read_profile("AMEX.pdf", _pages(amex_pages)),
            "AMD.pdf": read_profile("AMD.pdf", _pages(amd_pages)),
        }
    )
    terms = {"AMEX.pdf": {"american", "express", "amex", "card"}, "AMD.pdf": {"advanced", "micro", "device", "amd"}}
    return known, _Keywords(terms)


def test_a_name_a_filing_writes_on_many_pages_routes_to_it():
    known, keywords = _library()
    scope = decide(known, keywords, "Does AMEX have an improving operating margin profile as of 2022?")
    assert scope is not None and not scope.refused and [docs for _, docs in scope.routes] == [["AMEX.pdf"]]
    scope = decide(known, keywords, "What is the FY2015 depreciation and amortization of AMD?")
    assert scope is not None and [docs for _, docs in scope.routes] == [["AMD.pdf"]]


def test_a_name_no_document_holds_is_still_refused():
    known, keywords = _library()
    scope = decide(known, keywords, "What was Target's revenue in FY2022?")
    assert scope is not None and scope.refused == ["Target"] and scope.absent


def test_a_comparing_follow_up_keeps_the_first_company():
    known, keywords = _library()
    scope = decide(
        known,
        keywords,
        "How does that compare with AMD's?",
        previous=["What was American Express's revenue growth in FY2022?"],
    )
    assert scope is not None and sorted(docs[0] for _, docs in scope.routes) == ["AMD.pdf", "AMEX.pdf"]
    alone = decide(known, keywords, "What was AMD's revenue?", previous=["What was American Express's revenue?"])
    assert alone is not None and [docs for _, docs in alone.routes] == [["AMD.pdf"]]


def test_a_fiscal_year_as_analysts_write_it_is_the_filing_s_year_however_it_is_counted():
    # A year ending in January is named by either year it spans ("fiscal 2023" for the year ended
    # January 31, 2023; "fiscal 2022" for the one ended January 28, 2023): unsure, never marked.
    source = period_of("Fiscal year ended January 31, 2023 (twelve months)")
    assert agree(period_of("FY2023 revenue for the year"), source) is True
    assert agree(period_of("FY2022 revenue for the year"), source) is None
    assert agree(period_of("FY2021 revenue for the year"), source) is False
    june = period_of("twelve months ended June 30, 2023")
    assert agree(period_of("FY2023 revenue for the year"), june) is True
    assert agree(period_of("FY2022 revenue for the year"), june) is False


def test_a_name_with_an_ampersand_is_read_whole_and_a_date_is_nobody_s_name():
    from rag_core.figures.sources import document_entity

    # covers in capitals (3M's 10-K writes "3M COMPANY"; Procter & Gamble's its name with "&")
    assert document_entity("THE PROCTER & GAMBLE COMPANY\n(Exact name of registrant") == "THE PROCTER & GAMBLE COMPANY"
    assert document_entity("Commission file number 1-3285\n3M COMPANY\nState of Incorporation") == "3M COMPANY"
    release = [
        (1, "Johnson & Johnson (NYSE: JNJ) reports second-quarter results"),
        (2, "Johnson & Johnson sales grew."),
    ]
    subject = read_profile("jnj.pdf", release).subjects[0]
    assert subject.aliases[0] == ["johnson", "johnson"] and subject.tickers == ["jnj"]
    dated = read_profile("note.pdf", [(1, "June 2023\nQuarterly update"), (2, "June 2023 was a good month.")])
    assert all("june" not in a for s in dated.subjects for a in s.aliases)


def test_a_fiscal_year_as_analysts_write_it_picks_that_year_s_filing(tmp_path):
    """FY2022 weighs the filing whose name says 2022 as "2022" in the question would: the file
    names of FinanceBench's filings ("3M_2018_10K.pdf") and of the SEC set's ("2023 Q2 AAPL.pdf")
    write the year, analysts' questions "FY2022"."""
    from rag_core.retrieval.keywords import BM25
    from rag_core.storage.fts import SQLiteKeywordIndex
    from rag_core.storage.indexdb import IndexDB
    from rag_core.storage.keyword_index import ChunkRecord
    from rag_core.text import period_aliases

    assert period_aliases("FY2018 capex, FY19 revenue, the first quarter") == {"2018", "2019", "q1"}
    index = SQLiteKeywordIndex(IndexDB(tmp_path / "index.db"))
    text = "Vega capital expenditures were 18 million in the year."
    index.add(
        [ChunkRecord(f"{y}-1", f"{y}::p1", f"Vega_{y}_10K.pdf", f"Vega_{y}_10K.pdf", 1, text, {}) for y in (2018, 2022)]
    )
    for year, other in ((2018, 2022), (2022, 2018)):
        scores = BM25(index).doc_scores(f"What were Vega's FY{year} capital expenditures?", name_weight=1.0)
        assert scores[f"Vega_{year}_10K.pdf"] > scores[f"Vega_{other}_10K.pdf"]


def test_a_name_written_with_initials_dots_spaces_or_a_hyphen_is_the_registrant_s():
    # JPMorgan's 10-Qs: the cover's "JPMorgan Chase & Co.", the body's "J.P. Morgan Securities LLC";
    # analysts write "JP Morgan" too. Walmart's 10-Ks: the cover's "WALMART INC.", the body's
    # "Wal-Mart Stores, Inc." (its name before 2018). "J.P. Morgan" had been read as "Morgan", a
    # name no document is about, and "JP Morgan" as one no document holds: both refused.
    jpm = (
        "FORM 10-Q\nFor the quarterly period ended Commission file\nJune 30, 2022 number 1-5805\n"
        "JPMorgan Chase & Co.\n(Exact name of registrant as specified in its charter)"
    )
    wmt = (
        "FORM 10-K\nfor the fiscal year ended January 31, 2018 , or\nCommission file number 001-6991.\n"
        " WALMART INC.\n(Exact name of registrant as specified in its charter) Delaware 71-0415188"
    )
    jpm_pages = [jpm, *(f"J.P. Morgan Securities LLC reported net revenue up {i} percent." for i in range(8))]
    wmt_pages = [wmt, *(f"Wal-Mart Stores, Inc. comparable sales rose {i} percent." for i in range(8))]
    known = Entities(
        {"JPM.pdf": read_profile("JPM.pdf", _pages(jpm_pages)), "WMT.pdf": read_profile("WMT.pdf", _pages(wmt_pages))}
    )
    keywords = _Keywords(
        {"JPM.pdf": {"jpmorgan", "chase", "morgan", "securiti"}, "WMT.pdf": {"walmart", "wal", "mart"}}
    )
    for question, doc in (
        ("What was J.P. Morgan's net revenue in the second quarter of 2022?", "JPM.pdf"),
        ("What was JP Morgan's net interest income in 1Q21?", "JPM.pdf"),
        ("What were Wal-Mart's net sales in fiscal 2018?", "WMT.pdf"),
    ):
        scope = decide(known, keywords, question)
        assert scope is not None and not scope.refused and [docs for _, docs in scope.routes] == [[doc]], question
    assert [n.terms for n in question_names("What was J.P. Morgan's revenue?")] == [("jp", "morgan")]
    assert [n.terms for n in question_names("What were H. J. Heinz's sales?")] == [("hj", "heinz")]
    assert question_names("What were U.S. net sales?") == []  # initials alone stay no name
    # a subject's aliases keep no initials (Kraft Heinz's 10-K writes "H. J. Heinz Company"): a
    # question's name with them, or without, is still its name
    from rag_core.entities.names import name_matches, terms_of

    heinz = terms_of("H. J. Heinz Company")
    assert heinz == ("heinz",) and name_matches(("hj", "heinz"), heinz) and name_matches(("heinz",), heinz)
    assert not name_matches(("jp", "morgan"), ("morgan", "stanley"))
    scope = decide(known, keywords, "What was Morgan Stanley's net revenue?")  # still no one here
    assert scope is not None and scope.refused == ["Morgan Stanley"]


def test_the_figure_check_reads_a_name_with_initials_as_the_registrant_s():
    from rag_core.figures.sources import entity_keys

    registrant = entity_keys("JPMorgan Chase & Co. JPMORGAN_2022Q2_10Q.pdf")
    assert entity_keys("J.P. Morgan") & registrant and entity_keys("JP Morgan") & registrant
    assert entity_keys("Wal-Mart") & entity_keys("Walmart Inc. WALMART_2020_10K.pdf")
    assert not entity_keys("Morgan Stanley") & registrant


def test_a_measure_abbreviated_with_an_ampersand_is_no_name(filing_words):
    # "PP&E" (3M's and Lockheed Martin's 10-Ks write it; Activision Blizzard's FinanceBench question
    # asks its "average PP&E") and "SG&A" (3M's and Kraft Heinz's) were read as names, "pp" and
    # "sg": a library whose filings write "property, plant and equipment" was said not to mention
    # them, and a question naming no company was refused ("no indexed document names PP&E").
    coke = (
        "FORM 10-K\nFor the fiscal year ended December 31, 2017\nCommission File Number 001-02217\n"
        "THE COCA-COLA COMPANY\n(Exact name of Registrant as specified in its charter)"
    )
    coke_pages = [
        coke,
        *(f"Property, plant and equipment of The Coca-Cola Company rose {i} percent." for i in range(8)),
    ]
    known, keywords = _library()
    known = Entities({**known.profiles, "KO.pdf": read_profile("KO.pdf", _pages(coke_pages))})
    keywords.doc_terms["KO.pdf"] = {"coca", "cola", "property", "plant", "equipment"}
    for question in ("What was net PP&E at the end of 2017?", "How much was SG&A in 2015?"):
        assert question_names(question) == [], question
        scope = decide(known, keywords, question)
        assert scope is None or not scope.refused, question
        assert filing_words.names_in(question) == []
    scope = decide(known, keywords, "What was Coca-Cola's capex to PP&E ratio in 2017?")
    assert scope is not None and not scope.refused and not scope.unmentioned
    assert [docs for _, docs in scope.routes] == [["KO.pdf"]]
