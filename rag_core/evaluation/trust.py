"""The trust table: what a person relying on an answer gets, without a model to judge it.

Each answerable question's answer falls in one of five rows:

- ``right``: the gold is in the answer and the figure check marked nothing;
- ``right_marked``: the gold is in the answer but the check marked a figure (a false alarm:
  people learn to ignore marks, so it counts against us like a miss);
- ``wrong_marked``: the gold is not in the answer and the check marked a figure;
- ``wrong_unmarked``: the gold is not in the answer and nothing warned the reader;
- ``refused``: the answer says the documents don't say (for an answerable question).

"The gold is in the answer" (``judge``) needs no model: every gold figure among the answer's
figures (numbers normalised; the answer's figure rounds to the gold's, or both agree within
the coarser one's rounding with three significant digits); a gold answer that starts with
Yes or No needs the same stance first in the answer; a short gold without figures or stance
("Customer deposits") needs each of its words; a long one without either is not scored.

Rows are counted for all questions, per ``group`` (a set's halves: ``tune``, ``held-out``)
and per ``kind`` (a set's question types); ``figure_questions`` are those whose gold holds
a figure. ``page_in_sources``: the share of questions with a gold page among the sources.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from rag_core.evaluation.answers import Figure, figure_matches, figures, is_year, refused
from rag_core.evaluation.questions import EvalQuestion

ROWS = ("right", "right_marked", "wrong_marked", "wrong_unmarked", "refused")
_STANCE = re.compile(r"\b(yes|no)\b", re.IGNORECASE)
_WORD = re.compile(r"[^\W\d_]+(?:[-'][^\W\d_]+)*", re.UNICODE)
_STOP = frozenset(
    "a an the and or of in on at to for by with from as is are was were be been its it this that these those"
    " there their which who has have had not".split()
)
_SHORT_GOLD_WORDS = 8  # a gold without figures or stance longer than this is prose: not scored
_LIST_MARK = re.compile(r"\(\d{1,2}\)|^\s*\d{1,2}[.)]\s", re.MULTILINE)


def stance(text: str) -> str | None:
    """ "yes" or "no" when ``text`` starts by taking one (its first sentence's first yes/no)."""
    text = unicodedata.normalize("NFKC", text or "").strip().lstrip("*#>- ")
    first = re.split(r"(?<=[.!?])\s|\n", text, maxsplit=1)[0]
    m = _STANCE.search(first)
    return m.group(1).lower() if m else None


def gold_numbers(gold: str) -> list[Figure]:
    """The figures a gold answer states: amounts, percentages and ratios ("24.26"), not years,
    list marks or one-digit counts. A gold's trailing decimal zeros are its format ("$8.70" in
    a set that writes every amount "$X.YZ"), not its precision: "$8.70" is 8.7, to a tenth."""
    text = _LIST_MARK.sub(" ", unicodedata.normalize("NFKC", gold or ""))
    out = []
    for f in figures(text):
        if is_year(f):
            continue
        bare = f.text.strip().lstrip("-−(").strip()
        if f.percent or f.scaled or bare[:1] in "$€£¥" or abs(f.value) >= 10 or "." in bare:
            digits = re.search(r"\.(\d+)", bare)
            if digits and digits.group(1).endswith("0"):
                kept = len(digits.group(1).rstrip("0"))
                f = replace(f, step=f.step * 10 ** (len(digits.group(1)) - kept))
            out.append(f)
    return out


def number_said(gold: Figure, said: Sequence[Figure]) -> bool:
    """``gold`` is among ``said``: as ``figure_matches`` has it, or an answer's figure that
    rounds to the gold's written precision, or a bare ratio written as a percentage."""
    bare = not (gold.percent or gold.scaled)
    for c in said:
        if figure_matches(gold, c):
            return True
        if gold.step <= 0:
            continue
        if bare and c.percent and abs(gold.value) < 10:  # a ratio written as a percentage
            scales, value = [1.0], abs(c.value) / 100
        elif bare and c.scaled:  # "$8.70" (the question's billions) said as "$8,738 million"
            scales, value = [1.0, 1e3, 1e6, 1e9], abs(c.value)
        elif gold.percent == c.percent and gold.scaled == c.scaled:
            scales, value = [1.0], abs(c.value)
        else:
            continue
        if any(abs(abs(gold.value) * s - value) <= gold.step * s / 2 + 1e-9 * value for s in scales):
            return True
    return False


def _content_words(text: str) -> list[str]:
    return [
        w for w in (m.group(0).lower() for m in _WORD.finditer(unicodedata.normalize("NFKC", text))) if w not in _STOP
    ]


def judge(answer: str, gold: str) -> bool | None:
    """Whether ``answer`` says ``gold`` (see the module docstring); None when it can't be told."""
    gold = (gold or "").strip()
    if not gold:
        return None
    wanted_stance = stance(gold) if re.match(r"\s*(yes|no)\b", gold, re.IGNORECASE) else None
    if wanted_stance and stance(answer) != wanted_stance:
        return False
    numbers = gold_numbers(gold)
    if numbers:
        said = figures(answer)
        return all(number_said(g, said) for g in numbers)
    if wanted_stance:
        return True
    words = _content_words(gold)
    if not words or len(words) > _SHORT_GOLD_WORDS:
        return None
    have = set(_content_words(answer))
    return all(w in have for w in words)


def trust_row(answer: str, gold: str | None, marked: bool, error: bool = False) -> str | None:
    """One answer's row of the table, or None when its gold can't be told without a model."""
    if error or refused(answer):
        return "refused"
    right = judge(answer, gold or "")
    if right is None:
        return None
    if right:
        return "right_marked" if marked else "right"
    return "wrong_marked" if marked else "wrong_unmarked"


def is_figure_question(q: EvalQuestion) -> bool:
    return bool(q.gold_answer and gold_numbers(q.gold_answer))


def _table(pairs: list[tuple[EvalQuestion, dict[str, Any]]]) -> dict[str, Any]:
    out: dict[str, Any] = {"n": len(pairs)}
    scored = [(q, r) for q, r in pairs if r.get("trust")]
    out["scored"] = len(scored)
    for row in ROWS:
        out[row] = sum(1 for _, r in scored if r["trust"] == row)
    fig = [(q, r) for q, r in scored if is_figure_question(q)]
    out["figure_questions"] = len(fig)
    for row in ROWS:
        out[f"figure_{row}"] = sum(1 for _, r in fig if r["trust"] == row)
    paged = [r for q, r in pairs if q.gold_pages]
    if paged:
        out["page_in_sources"] = round(sum(1 for r in paged if r.get("page_rank")) / len(paged), 4)
    return out


def trust_table(rows: list[dict[str, Any]], questions: list[EvalQuestion]) -> dict[str, Any]:
    """The table for all answerable questions, per group and per kind (module docstring)."""
    pairs = [(q, r) for q, r in zip(questions, rows, strict=False) if q.answerable]
    out: dict[str, Any] = {"all": _table(pairs)}
    for field in ("group", "kind"):
        values = sorted({getattr(q, field) for q, _ in pairs if getattr(q, field)})
        if values:
            out[f"by_{field}"] = {v: _table([(q, r) for q, r in pairs if getattr(q, field) == v]) for v in values}
    return out


def format_trust(table: dict[str, Any]) -> str:
    """The table as text: one line per slice, the five rows as counts of the scored answers."""
    head = f"{'':<26}{'n':>4}{'right':>7}{'r.mark':>8}{'w.mark':>8}{'w.unm':>7}{'refus':>7}{'page':>7}"
    lines = ["trust table (answerable questions)", head]

    def line(name: str, t: dict[str, Any]) -> str:
        page = f"{t['page_in_sources']:.2f}" if "page_in_sources" in t else "-"
        counts = "".join(f"{t[r]:>{w}}" for r, w in zip(ROWS, (7, 8, 8, 7, 7), strict=True))
        return f"{name[:26]:<26}{t['scored']:>4}{counts}{page:>7}"

    lines.append(line("all", table["all"]))
    figure = {r: table["all"][f"figure_{r}"] for r in ROWS} | {"scored": table["all"]["figure_questions"]}
    lines.append(line("  figure questions", figure))
    for field in ("by_group", "by_kind"):
        for name, t in table.get(field, {}).items():
            lines.append(line(f"  {name}", t))
    return "\n".join(lines)
