"""A ratio computed as the question defines it: the formula read from the question, each
operand's figure found in the statements by structure (``statements``), the arithmetic shown.

Analysts state their formulas ("Fixed asset turnover ratio is defined as: FY2019 revenue /
(average PP&E between FY2018 and FY2019)"); a question that names a common measure without
stating it (working capital, capex, EBITDA, a margin) takes its definition from ``MEASURES``,
a small table written from the measures' textbook definitions, nothing keyed to any set's
question texts. An operand is a line item (``ITEMS``: the labels filings give it) in one
fiscal year, the average of two years, or the change between them. Nothing is computed
unless every operand is found; the result says each figure and where it stands.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from rag_core.figures.items import FALLBACK, ITEMS, OUTFLOWS, PARTS, SHOWN

# Measures a question may name without defining (textbook definitions): name pattern → formula
# over items ("{item}" a year's figure; "avg" / "chg" the average / change over the year before).
MEASURES: list[tuple[str, str, str]] = [
    (r"fixed\s+asset\s+turnover", "revenue / avg(ppe)", "ratio"),
    (r"(?<!fixed\s)asset\s+turnover", "revenue / avg(total_assets)", "ratio"),
    (r"inventory\s+turnover", "cogs / avg(inventory)", "ratio"),
    (r"return\s+on\s+assets|\broa\b", "net_income / avg(total_assets)", "ratio"),
    (r"days\s+payable\s+outstanding|\bdpo\b", "365 * avg(accounts_payable) / (cogs + chg(inventory))", "ratio"),
    (r"(?:net\s+)?working\s+capital", "current_assets - current_liabilities", "amount"),
    (r"\bebitda\s+%?\s*margin", "(operating_income + da) / revenue * 100", "percent"),
    (r"\bebitda\b", "operating_income + da", "amount"),
    (
        r"cash\s+conversion\s+cycle|\bccc\b",
        "365 * avg(inventory) / cogs + 365 * avg(receivables) / revenue - 365 * avg(accounts_payable) / cogs",
        "ratio",
    ),
    (r"capex\s+as\s+a\s+%\s+of\s+revenue|capex\s+to\s+revenue", "capex / revenue * 100", "percent"),
    # whether a business is capital-intensive: its capital spending against its sales, as equity research
    # measures it (FinanceBench's analysts answer 3M's "capital-intensive … based on FY2022 data" by
    # "CAPEX/Revenue Ratio: 5.1%"; read from 3M's and Corning's 2022 10-Ks: 5.11%, 11.30%)
    (r"capital[\s-]intensi(?:ve|ty)", "capex / revenue * 100", "percent"),
    (r"operating\s+(?:income\s+)?%?\s*margin", "operating_income / revenue * 100", "percent"),
    (r"(?:d&a|depreciation\s+and\s+amortization)\b.{0,40}%\s*margin", "da / revenue * 100", "percent"),
    (r"\bquick\s+ratio|acid[\s-]test", "(current_assets - inventory) / current_liabilities", "ratio"),
    (r"\bcurrent\s+ratio", "current_assets / current_liabilities", "ratio"),
    (r"gross\s+(?:profit\s+)?margin", "(revenue - cogs) / revenue * 100", "percent"),
    (r"net\s+(?:profit\s+|income\s+)?margin", "net_income / revenue * 100", "percent"),
    (r"days\s+sales\s+outstanding|\bdso\b", "365 * avg(receivables) / revenue", "ratio"),
    (r"days\s+(?:of\s+)?inventory\s+outstanding|\bdio\b", "365 * avg(inventory) / cogs", "ratio"),
    (r"interest\s+coverage", "operating_income / interest_expense", "ratio"),
    (r"return\s+on\s+(?:(?:share|stock)holders'?\s+)?equity|\broe\b", "net_income / avg(equity)", "ratio"),
    (r"free\s+cash\s+flows?|\bfcf\b", "operating_cash_flow - capex", "amount"),
    # a cost line's share of revenue
    (
        r"(?:sg&a|selling,?\s+general,?\s+(?:and|&)\s+administrative(?:\s+expenses?)?)\s+(?:as\s+a\s+)?"
        r"(?:%|percent(?:age)?)\s*(?:of\s+(?:total\s+)?(?:net\s+)?(?:revenues?|sales)|margin)",
        "sga / revenue * 100",
        "percent",
    ),
    (
        r"(?:r&d|research\s+and\s+development(?:\s+expenses?)?)\s+(?:as\s+a\s+)?"
        r"(?:%|percent(?:age)?)\s*(?:of\s+(?:total\s+)?(?:net\s+)?(?:revenues?|sales)|margin)",
        "rd / revenue * 100",
        "percent",
    ),
    # a share of the year's net income paid out as dividends, or kept (textbook payout and retention ratios)
    (r"(?:dividend\s+)?payout\s+ratio", "dividends / net_income_common", "ratio"),
    (r"retention\s+ratio|plowback\s+ratio", "(net_income_common - dividends) / net_income_common", "ratio"),
    # growth over the year before, of the later year a question names ("from FY2016 to FY2017")
    (
        r"(?:year[\s-]over[\s-]year|yoy|annual)\s+(?:change|growth)\s+(?:in|of)\s+(?:total\s+)?(?:net\s+)?"
        r"(?:revenues?|sales)|(?:revenues?|sales)\s+growth(?:\s+rate)?",
        "(revenue - prior(revenue)) / prior(revenue) * 100",
        "percent",
    ),
    (r"\bcogs\s+%\s*margin|cost\s+of\s+(?:goods\s+sold|sales)\s+%\s*margin", "cogs / revenue * 100", "percent"),
    (r"capital\s+expenditures?\s+amount|\bcapex\b|capital\s+expenditures?", "capex", "amount"),
    (
        r"(?:net\s+)?cash\s+(?:flows?\s+)?from\s+operati(?:ng\s+activities|ons)|operating\s+cash\s+flows?",
        "operating_cash_flow",
        "amount",
    ),
    (r"(?:net\s+)?pp&?n?e\b|net\s+property,?\s+plant", "ppe", "amount"),
    (r"cash\s+dividends|dividends\s+paid", "dividends", "amount"),
]
# A measure's name as the answer says it, where the question's words name no formula ("capital-intensive")
_SAID = {r"capital[\s-]intensi(?:ve|ty)": "capital intensity (capex as a % of revenue)"}
_FY = re.compile(r"\bFY\s?'?((?:19|20)\d{2})\b|\bfiscal\s+(?:year\s+)?((?:19|20)\d{2})\b", re.IGNORECASE)
_SPAN = re.compile(
    r"\bFY\s?((?:19|20)\d{2})\s*[-–]\s*FY\s?((?:19|20)\d{2})\s+(\d)[\s-]+year\s+average(?:\s+of)?\b", re.I
)
_DEFINED = re.compile(
    r"(?:is\s+defined\s+as|define\s+[\w\s&%()-]{1,60}?\s+as)\s*:?\s*(?P<expr>.+?)(?:\.\s+[A-Z]|\.?$)", re.I | re.S
)


@dataclass(frozen=True)
class Figure:
    """An operand's figure as found: the item, the year, the value (units) and where."""

    item: str
    year: int
    value: float
    written: str
    where: str  # "3M_2018_10K.pdf, page 60"


Lookup = Callable[[str, tuple[str, ...], int], Figure | None]


@dataclass(frozen=True)
class Result:
    name: str
    value: float
    kind: str  # ratio | percent | amount
    arithmetic: str
    figures: tuple[Figure, ...]

    def describe(self, question: str) -> str:
        """ "Fixed asset turnover ratio, FY2019: 24.26 = 6,489 / ((253 + 282) / 2) (…, page 70; …, page 69)"."""
        shown = show(self.value, self.kind, question)
        where = "; ".join(
            f"{SHOWN.get(f.item, f.item.replace('_', ' '))} FY{f.year}: {f.written} ({f.where})" for f in self.figures
        )
        return f"{self.name}: {shown} = {self.arithmetic}. From the statements: {where}."


def show(value: float, kind: str, question: str) -> str:
    """The result as the question asks it: its unit ("in USD billions"), its decimals."""
    q = question.lower()
    decimals = 1 if re.search(r"one\s+decimal", q) else 2
    if kind == "percent":
        return f"{value:.{decimals}f}%"
    if kind == "ratio":
        return f"{value:.{decimals}f}"
    sign, value = "-" if value < 0 else "", abs(value) * 1e6  # amounts are computed in millions; a loss is "-$660"
    for word, scale in (("billion", 1e9), ("million", 1e6), ("thousand", 1e3)):
        if re.search(rf"usd\s+{word}s|in\s+{word}s|\$\s?{word}", q):
            return f"{sign}${value / scale:,.2f} {word}"
    return f"{sign}${value / 1e6:,.0f} million"


def _item_of(phrase: str) -> str | None:
    phrase = phrase.strip().lower()
    if phrase in ITEMS:
        return phrase
    for key, (pattern, _) in ITEMS.items():
        if re.fullmatch(rf"(?:the\s+)?(?:{pattern})(?:\s+from\s+the\s+.+)?", phrase):
            return key
    return None


def _operand(phrase: str, year: int) -> tuple[str, str, int, int] | None:
    """(how, item, year, other year) of an operand phrase: "average PP&E between FY2018 and
    FY2019", "change in inventory between FY2019 and FY2020", "FY2020 COGS", "revenue"."""
    text = " ".join(phrase.split())
    m = re.fullmatch(r"(average|change\s+in)\s+(.+?)\s+between\s+FY\s?(\d{4})\s+and\s+FY\s?(\d{4})", text, re.I)
    if m:
        item = _item_of(m.group(2))
        how = "avg" if m.group(1).lower() == "average" else "chg"
        return (how, item, int(m.group(4)), int(m.group(3))) if item else None
    m = re.fullmatch(r"(?:FY\s?(\d{4})\s+)?(.+?)(?:\s+(?:in|for|of)\s+FY\s?(\d{4}))?", text, re.I)
    if not m:
        return None
    item = _item_of(m.group(2))
    y = int(m.group(1) or m.group(3) or year)
    return ("val", item, y, y) if item else None


def _template(expr: str, year: int) -> str:
    """A measure's formula over items written as operand phrases of ``year``."""
    keys = "|".join(ITEMS)
    expr = re.sub(rf"(?<![(\w])({keys})\b(?!\))", lambda m: f"FY{year} {m.group(1)}", expr)
    expr = re.sub(r"avg\((\w+)\)", lambda m: f"(average {m.group(1)} between FY{year - 1} and FY{year})", expr)
    expr = re.sub(r"prior\((\w+)\)", lambda m: f"FY{year - 1} {m.group(1)}", expr)
    return re.sub(r"chg\((\w+)\)", lambda m: f"(change in {m.group(1)} between FY{year - 1} and FY{year})", expr)


def formula_of(question: str) -> tuple[str, str, str, list[int]] | None:
    """(name, expression in operand phrases, kind, years) the question asks computed, or None."""
    years = [int(a or b) for a, b in _FY.findall(question)]
    if not years:
        return None
    span = _SPAN.search(question)
    first = years[0]
    defined = _DEFINED.search(question)
    if defined:
        expr = defined.group("expr").strip().rstrip(".")
        name_m = re.search(r"([A-Za-z][\w\s&()-]{2,60}?)\s+(?:is\s+defined|ratio\s+is\s+defined)", question, re.I)
        name = (name_m.group(1).strip() if name_m else "Result") + f", FY{first}"
        kind = "percent" if "%" in expr or "percent" in question.lower() else "ratio"
        return name, expr, kind, [first]
    for pattern, template, kind in MEASURES:
        m = re.search(pattern, question, re.I)
        if m:
            span_years = list(range(int(span.group(1)), int(span.group(2)) + 1)) if span else [first]
            if "prior(" in template and not span:  # a change: of the latest year named, over the one before
                span_years = [max(years)]
            return _SAID.get(pattern, m.group(0).strip()), template, kind, span_years
    return _single_item(question, first)


# A statement's line item asked for one fiscal year, as analysts write it ("the FY2020 total current
# assets", "FY2019 COGS", "total revenue for FY2020"): the item's name beside the year, and nothing
# after it that narrows it ("net income attributable to noncontrolling interests" is another row)
# nothing that narrows it: the question ends, or goes on with the company ("for 3M", "of the Coca-Cola
# Company"), the units, the statement or the year's end; not "in Europe", "for the iPhone", "from services"
_AFTER_ITEM = (
    r"(?=\s*(?:[?(,.;:]|$|(?:for|of)\s+(?:the\s+)?(?:(?-i:[A-Z0-9])[\w&.-]*\s*){1,4}(?:[?(,.;:]|$)"
    r"|in\s+(?:USD|US\$|\$|units|thousands|millions|billions)\b|at\s+(?:the\s+)?(?:year[\s-]end|end)\b"
    r"|(?:was|were|according|based|as\s+(?:reported|shown|stated))\b|from\s+the\s+(?:\w+\s+){0,2}statements?\b))"
)


def _single_item(question: str, year: int) -> tuple[str, str, str, list[int]] | None:
    for key, (pattern, _) in ITEMS.items():
        before = re.search(rf"\bFY\s?'?\d{{4}}\s+(?:year[\s-]end\s+)?(?:{pattern}){_AFTER_ITEM}", question, re.I)
        after = (
            re.search(  # "the total equity for FY2021", "Vega's COGS in FY2019"; not "the iPhone revenue for FY2022"
                rf"(?:\bthe\s+|['’]s\s+)(?:{pattern})\s+(?:in|for|during)\s+FY\s?'?\d{{4}}\b", question, re.I
            )
        )
        m = before or after
        if m:
            name = re.sub(
                r"^(?:the\s+|['’]s\s+|FY\s?'?\d{4}\s+)|\s+(?:in|for|during)\s+FY.*$", "", m.group(0), flags=re.I
            )
            return name.strip(), key, "amount", [year]
    return None


def _tokens(expr: str) -> list[str]:
    expr = expr.replace("×", "*").replace("÷", "/").replace("−", " - ")
    expr = re.sub(r"\s-\s", " − ", expr)  # a spaced minus is an operator; "PP&E" and "FY-" are not
    return [t.strip() for t in re.split(r"([()*/+−])", expr) if t.strip()]


def compute(question: str, lookup: Lookup) -> Result | None:
    """The question's formula computed over figures ``lookup(item, labels, year)`` finds, or
    None when it states none this reads, or some operand is not found."""
    asked = formula_of(question)
    if asked is None:
        return None
    name, expr, kind, years = asked
    return evaluate(name, expr if _DEFINED.search(question) else None, expr, kind, years, lookup)


def evaluate(
    name: str, defined: str | None, template: str, kind: str, years: list[int], lookup: Lookup
) -> Result | None:
    """A formula over items computed for ``years`` (their average when several): ``defined``,
    as a question writes it, or else ``template`` (``MEASURES``' notation) for each year."""
    results: list[float] = []
    shown_all: list[str] = []
    found: list[Figure] = []
    for year in years:
        text = defined or _template(template, year)
        got = _evaluate(_tokens(text), year, lookup, found)
        if got is None:
            return None
        results.append(got[0])
        shown_all.append(got[1])
    value = sum(results) / len(results)
    arithmetic = shown_all[0] if len(years) == 1 else f"({' + '.join(f'[{s}]' for s in shown_all)}) / {len(years)}"
    label = name if len(years) == 1 else f"{len(years)}-year average of {name}, FY{years[0]}–FY{years[-1]}"
    return Result(label[:1].upper() + label[1:], value, kind, arithmetic, tuple(dict.fromkeys(found)))


def _evaluate(tokens: list[str], year: int, lookup: Lookup, found: list[Figure]) -> tuple[float, str] | None:
    """A recursive-descent reading of + − * / and parentheses over numbers and operands."""
    pos = 0

    def atom() -> tuple[float, str] | None:
        nonlocal pos
        if pos >= len(tokens):
            return None
        tok = tokens[pos]
        pos += 1
        if tok == "(":
            inner = expression()
            if inner is None or pos >= len(tokens) or tokens[pos] != ")":
                return None
            pos += 1
            return inner[0], f"({inner[1]})"
        if re.fullmatch(r"\d+(?:\.\d+)?", tok):
            return float(tok), tok
        return _operand_value(tok, year, lookup, found)

    def term() -> tuple[float, str] | None:
        nonlocal pos
        left = atom()
        while left is not None and pos < len(tokens) and tokens[pos] in "*/":
            op = tokens[pos]
            pos += 1
            right = atom()
            if right is None or (op == "/" and right[0] == 0):
                return None
            left = (left[0] * right[0] if op == "*" else left[0] / right[0], f"{left[1]} {op} {right[1]}")
        return left

    def expression() -> tuple[float, str] | None:
        nonlocal pos
        left = term()
        while left is not None and pos < len(tokens) and tokens[pos] in "+−":
            op = tokens[pos]
            pos += 1
            right = term()
            if right is None:
                return None
            value = left[0] + right[0] if op == "+" else left[0] - right[0]
            left = (value, f"{left[1]} {'+' if op == '+' else '-'} {right[1]}")
        return left

    out = expression()
    return out if out is not None and pos == len(tokens) else None


def _operand_value(phrase: str, year: int, lookup: Lookup, found: list[Figure]) -> tuple[float, str] | None:
    parsed = _operand(phrase, year)
    if parsed is None:
        return None
    how, item, y, other = parsed
    labels = ITEMS[item][1]
    a = lookup(item, labels, y)
    if a is None and item in FALLBACK:
        item = FALLBACK[item]
        labels = ITEMS[item][1]
        a = lookup(item, labels, y)
    if a is None and how == "val" and item in PARTS:
        return _parts_value(item, y, lookup, found)
    if a is None:
        return None
    found.append(a)
    va = abs(a.value) if item in OUTFLOWS else a.value
    if how == "val":
        return va / 1e6, _plain(va)
    b = lookup(item, labels, other)
    if b is None:
        return None
    found.append(b)
    vb = abs(b.value) if item in OUTFLOWS else b.value
    if how == "avg":
        return (va + vb) / 2 / 1e6, f"({_plain(vb)} + {_plain(va)}) / 2"
    return (va - vb) / 1e6, f"({_plain(va)} - {_plain(vb)})"


def _parts_value(item: str, year: int, lookup: Lookup, found: list[Figure]) -> tuple[float, str] | None:
    """An item a statement writes as two rows (``PARTS``), their sum: each row read as the item
    is (from its statement), shown under its own name."""
    parts = []
    for name, labels in PARTS[item]:
        got = lookup(item, labels, year)
        if got is None:
            return None
        parts.append(replace(got, item=name))
    if len({p.where for p in parts}) > 1:  # the rows of one statement, not of two pages
        return None
    found.extend(parts)
    total = sum(abs(p.value) if item in OUTFLOWS else p.value for p in parts)
    return total / 1e6, "(" + " + ".join(_plain(p.value) for p in parts) + ")"


def _plain(value: float) -> str:
    """A figure in millions as statements write it ("6,489"; a negative in parentheses)."""
    millions = value / 1e6
    text = f"{abs(millions):,.0f}" if abs(millions) >= 100 else f"{abs(millions):,.1f}".rstrip("0").rstrip(".")
    return f"({text})" if millions < 0 else text
