"""Words of a text as search sees them: Latin words and CJK character bigrams.

The default embedding is English-only, so keyword search carries names, figures and
Chinese/Japanese/Korean text. Tokens are lower-cased words (a plural 's' dropped) plus
the characters and character bigrams of CJK runs, which needs no dictionary. Shared by
keyword search, the query variants, the embedding of tests and the evaluation metrics.
"""

from __future__ import annotations

import functools
import re

CJK_RANGES = "\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff"  # kana, CJK ideographs, hangul
CJK_RUN = re.compile(f"[{CJK_RANGES}]+")
CJK_CHAR = re.compile(f"[{CJK_RANGES}]")
LATIN_WORD = re.compile(r"[a-z0-9]+(?:[.,][0-9]+)*", re.IGNORECASE)
# a CJK character, or a run of other non-space characters: what counts as one word
WORD_UNIT = re.compile(f"[{CJK_RANGES}]|[^\\s{CJK_RANGES}]+")

STOP_WORDS = frozenset(
    "a an the of to in on for and or is are was were be been it its this that these those what which who whom "
    "how why when where do does did can could would should will shall may might with by from as at about into "
    "than then there their they them he she his her you your we our i me my not no yes".split()
)
# Words that say a sentence is a question or a request, not what it is about.
QUESTION_WORDS = frozenset(
    "tell know explain describe please give show find list mean means meant more much many any some also "
    "just really ok okay interesting thanks thank great wow".split()
)
CJK_SHARE = 0.3  # a query with more CJK characters than this is treated as CJK


# A period as analysts write it, one token once tokenized: "FY2023", "FY23", "Q2", "2Q23",
# "H1", "CY2022", "YTD", "TTM" (seen in filings' and earnings releases' own headers: Walmart's
# and Corning's 10-Ks write "fiscal 2020", analysts' questions "FY2020"). A period, never a name.
PERIOD_TOKEN = re.compile(
    r"(?:fy|cy|q[1-4]|h[12]|[1-4]q|[12]h)(?:\d{2}|\d{4})?|ytd|ttm|ltm|fiscal|quarter", re.IGNORECASE
)


def is_period_token(term: str) -> bool:
    """Whether a search term is a period ("fy2023", "q2", "2q23"), not a name."""
    return bool(PERIOD_TOKEN.fullmatch(term))


# Analysts' abbreviations of the measures and line items a question asks ("FY2020 COGS", "net
# PPNE", "the ROA", "unadjusted EBITDA": FinanceBench's questions on Corning, 3M, Coca-Cola and
# American Water Works): words of a measure, no company's name.
MEASURE_WORDS = frozenset("cogs cog dpo dso dio ccc roa roe roic ebit ebitda capex fcf eps ppe ppne sga".split())


# Currency codes written beside a figure ("in USD millions", "Answer in USD billions": FinanceBench's
# questions on 3M, American Water Works and Activision Blizzard; "EUR 5 billion"): a unit, no one's name.
CURRENCY_CODES = frozenset("usd eur gbp jpy cny rmb chf inr krw hkd sgd".split())  # not CAD, AUD: also acronyms


def is_measure(written: str) -> bool:
    """Whether a word as written is an analyst's abbreviation of a measure, its letters joined:
    "PP&E" (3M's and Lockheed Martin's 10-Ks write it), "SG&A" (3M's and Kraft Heinz's), "ROA";
    the search terms of "PP&E" are "pp" and "e", which no measure word is."""
    letters = re.sub(r"[^a-z0-9]", "", re.sub(r"['’]s$", "", written.lower()))
    return letters in MEASURE_WORDS


# Line items analysts abbreviate and filings spell out, searched by both: Galaxy Gaming's balance
# sheet writes "Property and equipment, net", 3M's and Corning's "Property, plant and equipment";
# "Selling, general and administrative expenses" (3M's, Kraft Heinz's); "Cost of sales" (Corning's,
# 3M's); "Depreciation and amortization" (American Water Works', Galaxy Gaming's cash flows);
# "Research and development" (3M's, AMD's). No search term of "PP&E" ("pp", "e") is in those rows.
# Only unambiguous forms: "PPE" is also protective equipment, "cogs" a word, so those two in capitals.
_SPELLED = {  # by the letters of the abbreviation as written
    "ppe": "property plant and equipment",
    "ppne": "property plant and equipment",
    "sga": "selling general and administrative",
    "cogs": "cost of sales cost of goods sold",
    "da": "depreciation and amortization",
    "rd": "research and development",
}
_ABBREVIATED = re.compile(r"(?<![\w&])(?:(?i:PP&E|SG&A|D&A|R&D)|PPNE|COGS)(?![\w&])")


def spelled_out(text: str) -> str:
    """``text`` with each line item an analyst abbreviates ("net PP&E", "FY2020 COGS") followed by
    the words filings write it in, for the search: "net PP&E (property plant and equipment)"."""
    return _ABBREVIATED.sub(lambda m: f"{m.group(0)} ({_SPELLED[re.sub(r'[^a-z]', '', m.group(0).lower())]})", text)


def is_name_word(term: str) -> bool:
    """Whether a capitalised search term may be (part of) a name: not a period, a measure or a currency."""
    return not PERIOD_TOKEN.fullmatch(term) and term not in MEASURE_WORDS and term not in CURRENCY_CODES


def stem(word: str) -> str:
    """Plural/third-person 's' only: 'delivers' matches 'deliver', 'pumps' matches 'pump'."""
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")) and not word[0].isdigit():
        return word[:-1]
    return word


def tokenize(text: str) -> list[str]:
    """Latin words (no stop words) and CJK character bigrams (and single characters)."""
    text = text.lower()
    tokens = [stem(w) for w in LATIN_WORD.findall(text) if w not in STOP_WORDS]
    for run in CJK_RUN.findall(text):
        tokens.extend(run)
        tokens.extend(run[i : i + 2] for i in range(len(run) - 1))
    return tokens


def query_terms(text: str) -> set[str]:
    """Terms that say what a query is about: content words, and CJK bigrams (single
    characters only for one-character runs, since most single characters are common)."""
    text = text.lower()
    terms = {stem(w) for w in LATIN_WORD.findall(text) if w not in STOP_WORDS and w not in QUESTION_WORDS}
    for run in CJK_RUN.findall(text):
        if len(run) == 1:
            terms.add(run)
        else:
            terms.update(run[i : i + 2] for i in range(len(run) - 1))
    return terms


def cjk_share(text: str) -> float:
    """Share of the non-space characters that are CJK."""
    chars = [c for c in text if not c.isspace()]
    return sum(len(r) for r in CJK_RUN.findall(text)) / len(chars) if chars else 0.0


def is_cjk(text: str) -> bool:
    return cjk_share(text) > CJK_SHARE


def keyword_query(text: str) -> str:
    """The query's content terms in their original order: a rule-based rephrasing."""
    words = [w for w in LATIN_WORD.findall(text) if w.lower() not in STOP_WORDS and w.lower() not in QUESTION_WORDS]
    return " ".join(words + CJK_RUN.findall(text))


def focus_sentence(text: str) -> str:
    """The last sentence that asks something ("Interesting. What about X?" → "What about X?")."""
    parts = [p.strip() for p in re.split(r"(?<=[.!?。！？])\s*", text) if p.strip()]
    asking = [p for p in parts if p.endswith(("?", "？"))]
    return (asking or parts or [text])[-1]


def head_words(text: str, n: int) -> str:
    """The start of ``text``: ``n`` words, a CJK character counting as one."""
    end = 0
    for i, m in enumerate(WORD_UNIT.finditer(text or "")):
        if i >= n:
            break
        end = m.end()
    return (text or "")[:end]


_QUARTERS = {
    "first": "q1",
    "second": "q2",
    "third": "q3",
    "fourth": "q4",
    "1st": "q1",
    "2nd": "q2",
    "3rd": "q3",
    "4th": "q4",
}
_QUARTER_PHRASE = re.compile(r"\b(first|second|third|fourth|1st|2nd|3rd|4th)\s+(?:fiscal\s+)?quarter\b", re.IGNORECASE)


_FISCAL_YEAR = re.compile(r"\bFY\s?'?((?:19|20)?\d{2})\b", re.IGNORECASE)


def period_aliases(text: str) -> set[str]:
    """Short forms of the periods a question spells out ("the first quarter" → q1), as file
    names and headers write them; and the year of a fiscal year as analysts write it ("FY2018",
    "FY18" → 2018), as filings, their covers and their file names write it ("fiscal 2018",
    "3M_2018_10K.pdf")."""
    out = {_QUARTERS[m.group(1).lower()] for m in _QUARTER_PHRASE.finditer(text)}
    for m in _FISCAL_YEAR.finditer(text):
        year = m.group(1)
        out.add(year if len(year) == 4 else f"20{year}")
    return out


_MONTHS = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_TABLE_HEADER = re.compile(
    r"(?:months|weeks|quarters?|years?|periods?)\s+ended|\bas of\b|\(in (?:millions|thousands|billions)"
    r"|\bin (?:millions|thousands|billions)\b|^\s*"
    + _MONTHS
    + r"\s+\d{1,2},?\s*(?:\d{4})?\s*$|^\s*(?:(?:19|20)\d{2}\s*)+$",
    re.IGNORECASE,
)


# The two line tests below are asked of the same lines again and again (each chunk of a page
# looks back over the page's lines; what a document is about reads every line): remembered.
_SEEN_LINES = 1 << 16


@functools.lru_cache(maxsize=_SEEN_LINES)
def is_title(line: str) -> bool:
    """A line set in capitals: a statement's or section's title ("CONDENSED CONSOLIDATED
    STATEMENTS OF OPERATIONS (Unaudited)")."""
    if len(line) < 12:  # fewer than 12 letters
        return False
    letters = [c for c in line if c.isalpha()]
    return len(letters) >= 12 and sum(c.isupper() for c in letters) >= 0.7 * len(letters)


@functools.lru_cache(maxsize=_SEEN_LINES)
def is_header(line: str) -> bool:
    """A line that names a table's columns, units or periods ("Three Months Ended", "June 25,",
    "2022", "(In millions)"), or a title."""
    return bool(_TABLE_HEADER.search(line)) or is_title(line)
