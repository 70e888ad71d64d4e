"""A figure the model computed, recomputed: a difference, a sum, a ratio, a share, a percent
change or a change in percentage points, from two figures of one related group (the answer's
own supported figures, one table row, one column of a table, one sentence).

Only pairs within a group are tried, and a figure of the sources enters a group only when
its row or sentence is a line item the claim names: with 60 numbers on a page, some pair
gives any percentage; with the two cells of the "Net income" row, only the real change does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import permutations
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rag_core.figures.claims import Claim


@dataclass(frozen=True)
class Operand:
    text: str  # as the source (or the answer) writes it
    value: float  # signed, in units when its unit is known
    percent: bool
    passage: int | None  # the [n] it comes from (None: the answer's own figure)
    step: float = 0.0  # the place value of its last written digit, in the units of ``value``


@dataclass(frozen=True)
class Computed:
    text: str  # "36% = 1,100 / 3,050"
    passage: int | None


def _close(claim_value: float, step: float, result: float, spread: float) -> bool:
    """Whether the claim, as rounded, is the result, within what the operands' own rounding
    lets it be (``spread``): "76.4%" is not 50.0 / 65.8, which is 75.9% to 76.1%."""
    return abs(abs(claim_value) - abs(result)) <= step / 2 + spread + 1e-9 * abs(claim_value)


def _spread(a: Operand, b: Operand, how: Callable[[float, float], float], result: float) -> float:
    """How far ``result`` may be from the exact one, the operands being rounded as written: the
    result at the ends of their rounding intervals."""
    out = 0.0
    for da in (-a.step / 2, a.step / 2):
        for db in (-b.step / 2, b.step / 2):
            try:
                out = max(out, abs(how(a.value + da, b.value + db) - result))
            except ZeroDivisionError:
                continue
    return out


def recompute(claim: Claim, groups: Sequence[Sequence[Operand]]) -> Computed | None:
    """The first way ``claim``'s figure comes out of two figures of one group, or None."""
    n = claim.number
    times = _times_after(claim)
    points = n.percent and any(w in n.text.lower() for w in ("pt", "point"))
    if not n.percent and not times and n.significant < 2:
        return None
    # a bare figure ("6,803") may be in the table's unit: try it at the usual scales
    scales = [n.scale] if n.scaled or n.percent or times else [1.0, 1e3, 1e6, 1e9]
    for group in groups:
        if len(group) < 2:
            continue
        for a, b in permutations(group, 2):
            if min(abs(a.value), abs(b.value)) < 0.01 * max(abs(a.value), abs(b.value)):
                continue  # "x - 13": a figure and a rounding error of it
            for text, how in _results(n.text, a, b, n.percent, points, times):
                result = how(a.value, b.value)
                if n.negative and result > 0 and a.value > 0 and b.value > 0:
                    # "-181%" is no ratio of $181 and $99: of two positive figures, the sign written is
                    # the result's (outflows in parentheses are left alone: a fall in "(1,577)" is read
                    # either way round)
                    continue
                spread = _spread(a, b, how, result)
                for s in scales:
                    if result and _close(n.magnitude * s, 10.0**-n.decimals * s, result, spread):
                        return Computed(text, a.passage if a.passage is not None else b.passage)
    return None


def _times_after(claim: Claim) -> bool:
    sentence = claim.sentence
    i = sentence.find(claim.number.text)
    tail = sentence[i + len(claim.number.text) : i + len(claim.number.text) + 12].lower() if i >= 0 else ""
    return tail.lstrip().startswith(("times", "x ", "-fold", "fold"))


Way = Callable[[float, float], float]


def _results(claim: str, a: Operand, b: Operand, percent: bool, points: bool, times: bool) -> list[tuple[str, Way]]:
    """What ``a`` and ``b`` may give, written out ("36% = 1,100 / 3,050"), with how to compute it."""
    out: list[tuple[str, Way]] = []
    if points:
        if a.percent and b.percent:
            out.append((f"{claim} = {a.text} − {b.text}", lambda x, y: x - y))
        return out
    if a.percent or b.percent:
        return out
    if percent and b.value:
        out.append((f"{claim} = {a.text} / {b.text}", lambda x, y: 100.0 * x / y))
        out.append((f"{claim} = ({a.text} − {b.text}) / {b.text}", lambda x, y: 100.0 * (x - y) / abs(y)))
    elif times and b.value:
        out.append((f"{claim} = {a.text} / {b.text}", lambda x, y: x / y))
    elif not percent:
        if a.value >= b.value or claim.lstrip().startswith(("-", "−", "(")):  # written larger first, unless negative
            out.append((f"{claim} = {a.text} − {b.text}", lambda x, y: x - y))
        out.append((f"{claim} = {a.text} + {b.text}", lambda x, y: x + y))
    return out
