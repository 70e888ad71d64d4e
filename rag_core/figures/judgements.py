"""The measures a yes-or-no judgement of a business is read by ("Is 3M a capital-intensive
business based on FY2022 data?"), computed from the statements so that the model judges from
figures it is given with their pages, not from its impression.

The app states no verdict of its own: where the line falls is the reader's (and the model's)
call, and a threshold the filing does not state could not be checked. Each judgement's measures
are written from their textbook use, nothing keyed to any set's question texts.
"""

from __future__ import annotations

import re

from rag_core.figures.formulas import Lookup, Result, evaluate

# A judgement asked as a yes-or-no question: its measures as (name, formula over items, kind), in
# ``formulas.MEASURES``' notation. Capital intensity: how much of its sales a business spends on fixed
# assets, how much of what it owns they are, and the return it earns on all it owns (a heavy asset base
# earns a low one). Read from 3M's 2022 10-K (capex 1,749 of net sales 34,229: 5.11%; PP&E 9,178 of total
# assets 46,455: 19.76%; net income attributable to 3M 5,777: 12.44%; FinanceBench's analysts answer
# "CAPEX/Revenue Ratio: 5.1%, Fixed assets/Total Assets: 20%, Return on Assets= 12.4%") and Corning's
# (capex 1,604 of net sales 14,189: 11.30%; PP&E 15,371 of total assets 29,499: 52.11%).
JUDGEMENTS: tuple[tuple[re.Pattern[str], tuple[tuple[str, str, str], ...]], ...] = (
    (
        re.compile(r"^\W*(?:is|was|are|were)\b[^?]*?\bcapital[\s-]intensive\b", re.I),
        (
            ("Capex as a % of revenue", "capex / revenue * 100", "percent"),
            ("Fixed assets (net PP&E) as a % of total assets", "ppe / total_assets * 100", "percent"),
            ("Return on assets", "net_income_common / total_assets * 100", "percent"),
        ),
    ),
)


def judged_by(question: str, years: list[int], lookup: Lookup) -> tuple[Result, ...] | None:
    """The measures of the judgement ``question`` asks, for the latest of ``years``; None when
    it asks none, or a measure's operand is not found (nothing is guessed)."""
    asked = question.split("?")[0]
    measures = next((m for pattern, m in JUDGEMENTS if pattern.search(asked)), None)
    if measures is None or not years:
        return None
    year = max(years)
    results = []
    for name, template, kind in measures:
        result = evaluate(f"{name}, FY{year}", None, template, kind, [year], lookup)
        if result is None:
            return None
        results.append(result)
    return tuple(results)
