"""Every number of a text, with what it is: a figure to check, or a year, a date, a quarter's
name, a citation marker, a list number, a page or note reference, a product's name.

An answer's figures are checked against its sources as numbers, so "$82.96 billion" must
meet "82,959" in a table headed "(In millions)": each number keeps its written precision
(82.96 billion is 82,955–82,965 million) and its written scale word (million, bn, 万, 亿).
The words around a number decide what it is: "July 30, 2023" holds no figure, "Q3" and
"fiscal 2024" name periods, "[1]" cites. Full-width digits and signs (Chinese text) are read
as their ASCII forms; spans stay those of the original text.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, replace

SCALES = {
    "thousand": 1e3,
    "thousands": 1e3,
    "k": 1e3,
    "million": 1e6,
    "millions": 1e6,
    "mn": 1e6,
    "mm": 1e6,
    "m": 1e6,
    "billion": 1e9,
    "billions": 1e9,
    "bn": 1e9,
    "b": 1e9,
    "trillion": 1e12,
    "trillions": 1e12,
    "千": 1e3,
    "万": 1e4,
    "十万": 1e5,
    "百万": 1e6,
    "千万": 1e7,
    "亿": 1e8,
    "万亿": 1e12,
}
_MONTH = r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
MONTH = re.compile(rf"\b{_MONTH}\b\.?", re.IGNORECASE)
_NUMBER = re.compile(
    r"(?P<open>\(\s?)?(?P<neg>(?<![\w.,])[-−–](?=[$€£¥]?\d))?\s?"
    r"(?P<cur>US\$|\$|€|£|¥|(?:USD|EUR|GBP|RMB|CNY|JPY)\s?)?\s?(?P<open2>\(\s?)?(?P<neg2>(?<![\w.,])[-−–](?=\d))?"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)(?P<exp>[eE][-+−]\d{1,3}(?![\w.]))?"
    r"(?P<close>(?(open)\s?\)|(?(open2)\s?\))))"
    r"(?:\s?(?P<pct>%|percent\b|per\s?cent\b|percentage\s+points?\b|pts?\b|个百分点))?"
    r"(?:\s?(?P<scale>thousands?\b|millions?\b|billions?\b|trillions?\b|mn\b|mm\b|bn\b|[mbk]\b|万亿|十万|百万|千万|万|亿|千))?",
    re.IGNORECASE,
)
_CITATION = re.compile(r"\[\s*\d{1,3}(?:\s*[,–-]\s*\d{1,3})*\s*\]")
_REFERENCE = re.compile(
    r"\b(?:pages?|pp?\.|items?|notes?|parts?|sections?|chapters?|tables?|figures?|fig\.|exhibits?|rules?|"
    r"articles?|schedules?|lines?|steps?|no\.|number|version|v\.|topic|asc|asu|ifrs|ias|gaap|step)\s*$",
    re.IGNORECASE,
)
_FISCAL = re.compile(r"\b(?:fiscal(?:\s+years?)?|fy|financial\s+year|calendar(?:\s+year)?|cy)\s*'?$", re.IGNORECASE)
_ORDINAL = re.compile(r"^(?:st|nd|rd|th)\b", re.IGNORECASE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]")
KINDS = ("figure", "year", "date", "period", "citation", "list", "reference", "name", "ordinal")


@dataclass(frozen=True)
class Number:
    """A number as written, and what it is (``kind``: one of ``KINDS``; only ``figure`` is
    checked)."""

    text: str  # as written: sign, currency, digits, percent sign, scale word
    start: int
    end: int
    magnitude: float  # the written digits' value, unsigned, without the scale word
    decimals: int  # digits written after the point
    negative: bool  # a minus sign or parentheses
    currency: str  # "$", "€", "USD" ... or ""
    percent: bool  # "%", "percent", "pts", "percentage points"
    scale: float  # of the written scale word ("billion" → 1e9, 万 → 1e4); 1.0 without one
    kind: str = "figure"

    @property
    def scaled(self) -> bool:
        return self.scale != 1.0

    @property
    def value(self) -> float:
        """Signed, with the written scale applied."""
        return (-1 if self.negative else 1) * self.magnitude * self.scale

    @property
    def step(self) -> float:
        """The place value of the last written digit, with the written scale: the precision."""
        return 10.0**-self.decimals * self.scale

    @property
    def clean(self) -> str:
        """As written, without PDF spacing inside it ("$ 6,728" → "$6,728", "(260 )" → "(260)")."""
        return re.sub(r"(?<=[$€£¥(])\s+|\s+(?=[)%])", "", self.text.strip())

    @property
    def digits(self) -> str:
        """The digits alone ("82,959.0" → "82959.0"): two numbers written alike."""
        return f"{self.magnitude:.{self.decimals}f}"

    @property
    def significant(self) -> int:
        """Significant digits written ("$7 billion" 1, "13.5" 3, "13,507" 5)."""
        whole = self.digits.replace(".", "").lstrip("0")
        return max(1, len(whole.rstrip("0")) if self.decimals == 0 else len(whole))


def ascii_digits(text: str) -> str:
    """``text`` with full-width digits and signs as ASCII, one character for one (spans kept)."""
    out = []
    for ch in text:
        if ord(ch) < 128:
            out.append(ch)
            continue
        folded = unicodedata.normalize("NFKC", ch)
        out.append(folded if len(folded) == 1 else ch)
    return "".join(out)


def read_numbers(text: str) -> list[Number]:
    """Every number of ``text``, each with its ``kind``."""
    text = ascii_digits(text or "")
    cited = [(m.start(), m.end()) for m in _CITATION.finditer(text)]
    out: list[Number] = []
    for m in _NUMBER.finditer(text):
        num_start, num_end = m.span("num")
        raw = m.group("num").replace(",", "")
        try:
            magnitude = float(raw)
        except ValueError:  # pragma: no cover - the pattern allows only digits
            continue
        decimals = len(raw.split(".", 1)[1]) if "." in raw else 0
        currency = (m.group("cur") or "").strip()
        scale_word = (m.group("scale") or "").lower()
        if scale_word in ("m", "b", "k", "mm") and not currency:
            scale_word = ""  # "5 m of cable", "4 k": a bare letter is a scale only after a currency
        negative = bool(m.group("neg") or m.group("neg2") or m.group("close"))
        marks = [g for g in ("open", "neg", "cur", "open2", "neg2") if m.group(g)]
        start = m.start(marks[0]) if marks else num_start
        exponent = m.group("exp")  # "5.39E-05": a table's scientific notation, its power a scale
        if exponent:
            num_end, scale_word = m.end("exp"), ""
        ends = [num_end, m.end("close"), m.end("pct") if m.group("pct") else -1]
        ends.append(m.end("scale") if scale_word else -1)
        end = max(ends)
        number = Number(
            text=text[start:end].strip(),
            start=start,
            end=end,
            magnitude=magnitude,
            decimals=decimals,
            negative=negative,
            currency=currency,
            percent=bool(m.group("pct")),
            scale=10.0 ** int(exponent[1:].replace("−", "-")) if exponent else SCALES.get(scale_word, 1.0),
        )
        kind = _kind(text, number, num_start, num_end, cited)
        out.append(number if kind == "figure" else _with_kind(number, kind))
    return _ranges(text, out)


_RANGE = re.compile(r"\s*(?:-|–|—|to)\s*")


def _ranges(text: str, numbers: list[Number]) -> list[Number]:
    """A range's first end in the unit written after its second ("0.75 - 1.2%", "$5 to $7
    billion": 0.75%, $5 billion)."""
    for k in range(len(numbers) - 1):
        a, b = numbers[k], numbers[k + 1]
        if a.kind != "figure" or not _RANGE.fullmatch(text[a.end : b.start]):
            continue
        if b.percent and not a.percent and not a.currency:
            numbers[k] = replace(a, percent=True)
        elif b.scale != 1.0 and a.scale == 1.0 and not a.percent:
            numbers[k] = replace(a, scale=b.scale)
    return numbers


def _with_kind(number: Number, kind: str) -> Number:
    return Number(**{**number.__dict__, "kind": kind})


def _kind(text: str, n: Number, start: int, end: int, cited: list[tuple[int, int]]) -> str:
    before, after = text[max(0, start - 24) : start], text[end : end + 16]
    prev = text[start - 1] if start else " "
    if any(a <= start and end <= b for a, b in cited):
        return "citation"
    if prev.isalpha() and prev.isascii():  # "Q3", "H100", "FY24", "A17"
        if re.search(r"\b(?:FY|CY)$", before, re.IGNORECASE) or (re.search(r"\b[QH]$", before) and n.magnitude <= 4):
            return "period"
        return "name"
    if re.match(r"[A-Za-z]", after) and not n.percent and not n.scaled:
        if _ORDINAL.match(after):
            return "ordinal"
        return "period" if re.match(r"[QH]\b", after) else "name"  # "3Q23", "1H", "4K", "5G"
    if re.match(r"-[A-Za-z]", after) or re.search(r"[A-Za-z]-$", before):  # "10-Q", "8-K", "COVID-19"
        return "name"
    if re.match(r"\s?(?:年|年度)", after) and n.decimals == 0 and not n.currency:
        return "year"
    if re.match(r"\s?(?:月|日|号|时|点|分)", after) and n.decimals == 0 and not n.currency:
        return "date"
    if re.search(r"第\s?$", before):
        return "ordinal"
    if n.percent or n.currency:
        return "figure"
    whole = n.decimals == 0 and not n.scaled
    if whole and _is_day(text, start, end, n):
        return "date"
    slashed = re.search(r"\d\s?[/-]\s?$", before) or (re.match(r"\s?[/-]\s?\d", after) and _slashed(text, start))
    if whole and slashed:
        return "date"
    if whole and "," not in n.text and (1800 <= n.magnitude <= 2100 or _year_range(text, start, end)):
        return "period" if _FISCAL.search(before) else "year"
    if whole and re.search(r"(?:^|\n)[ \t]*(?:[-*•]\s*)?$", before) and re.match(r"[.)]\s", after):
        return "list"
    if whole and _REFERENCE.search(before):
        return "reference"
    return "figure"


def _year_range(text: str, start: int, end: int) -> bool:
    """One end of "1807-1809", "1066–1087年": two years joined by a dash."""
    pair = re.compile(r"(1\d{3}|20\d{2})\s?[-–—~至到]\s?(1\d{3}|20\d{2})")
    window = text[max(0, start - 6) : end + 6]
    return any(m.start() + max(0, start - 6) <= start < m.end() + max(0, start - 6) for m in pair.finditer(window))


def _is_day(text: str, start: int, end: int, n: Number) -> bool:
    """A day of a month: "July 30, 2023", "Sep 30", "30 June 2023"."""
    if n.magnitude < 1 or n.magnitude > 31:
        return False
    before = text[max(0, start - 11) : start]
    after = text[end : end + 12]
    if re.search(rf"\b{_MONTH}\.?\s*$", before, re.IGNORECASE):
        return True
    return bool(re.match(rf"\s*(?:st|nd|rd|th)?\s*(?:of\s+)?{_MONTH}\b", after, re.IGNORECASE))


def _slashed(text: str, start: int) -> bool:
    """Part of "7/30/2023" or "2023-07-30": numbers joined by slashes or hyphens."""
    m = re.match(r"\d{1,4}\s?[/-]\s?\d{1,2}(?:\s?[/-]\s?\d{1,4})?", text[start:])
    return bool(m and re.search(r"[/-]", m.group(0)) and len(re.findall(r"\d+", m.group(0))) == 3)


def figures(text: str, question: str = "") -> list[Number]:
    """The numbers of ``text`` worth checking: amounts, percentages and counts of ten or more;
    not years, dates, quarters, citations, list or page numbers, nor a number the question
    itself gives (its years, its dates, a threshold it names)."""
    asked = {(n.digits, n.percent) for n in read_numbers(question) if n.kind == "figure"} if question else set()
    out = []
    for n in read_numbers(text):
        if n.kind != "figure" or (n.digits, n.percent) in asked:
            continue
        if not (n.percent or n.currency or n.scaled) and n.decimals == 0 and n.magnitude < 10:
            continue  # "3 segments", "1 of 2": a small count says too little to check
        out.append(n)
    return out


def has_cjk(text: str) -> bool:
    return bool(_CJK.search(text or ""))
