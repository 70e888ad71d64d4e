"""The line items a computed measure reads (``formulas``): each as questions name it (a
pattern) and as statements label it (labels, preferred first), and which of them statements
write as outflows. Each label was read in the statements of two filings or more of different
companies (FinanceBench's tune half: 3M, Activision Blizzard, AMD, American Water Works,
Coca-Cola, Corning; the SEC 10-Qs of Apple, Amazon, Intel, Microsoft, NVIDIA)."""

from __future__ import annotations

import re

# A line item as questions name it (pattern) and as statements label it (labels, preferred first).
ITEMS: dict[str, tuple[str, tuple[str, ...]]] = {
    "revenue": (
        r"(?:total\s+)?(?:net\s+)?(?:revenues?|sales)",
        (
            "Total net revenues",
            "Total revenues",
            "Net revenues",
            "Net revenue",
            "Total net sales",
            "Net sales",
            "Total revenue",
            "Revenues",
            "Revenue",
            "Operating revenues",
            "Net operating revenues",
            "Total operating revenues",
        ),
    ),
    "cogs": (
        r"cogs|cost\s+of\s+(?:goods\s+sold|sales|revenues?|products\s+sold)",
        (
            "Cost of sales",
            "Cost of goods sold",
            "Cost of revenue",
            "Cost of revenues",
            "Total cost of revenues",
            "Cost of products sold",
            "Total cost of sales",  # Apple's 10-Q; Microsoft's: "Total cost of revenue"
            "Total cost of revenue",
        ),
    ),
    "ppe": (
        r"(?:net\s+)?(?:pp&?n?e|property,?\s+plant,?\s+and\s+equipment|fixed\s+assets|property\s+and\s+equipment)",
        (
            "Property, plant and equipment, net",
            "Property, plant and equipment — net",
            "Property, plant and equipment - net",
            "Net property, plant and equipment",
            "Property and equipment, net",
            "Property, plant and equipment",
            "Property and equipment",
        ),
    ),
    "total_assets": (r"total\s+assets", ("Total assets",)),
    "net_income": (
        r"net\s+(?:income|earnings)",
        (
            "Net income",  # "Net income (loss)": Amazon's and Intel's 10-Qs
            "Consolidated net income",
            "Net earnings",
            "Net income attributable to common shareholders",
            "Net loss",  # AMD's 2015 10-K, Amazon's 10-Qs
        ),
    ),
    # the net income of the company's own shareholders, without noncontrolling interests' share: "Net income
    # attributable to 3M", "… to shareowners of The Coca-Cola Company", "… to Corning Incorporated", "… to
    # common shareholders" (American Water Works); a company without such interests writes only "Net income"
    "net_income_common": (
        r"net\s+(?:income|earnings)\s+attributable\s+to\s+(?:common\s+)?(?:share(?:holders|owners)|stockholders)",
        ("Net income attributable to common shareholders", "Net income attributable to common stockholders"),
    ),
    "inventory": (
        r"inventor(?:y|ies)",
        ("Inventories", "Inventories, net", "Total inventories", "Inventory", "Merchandise inventories"),
    ),
    "accounts_payable": (r"accounts\s+payable", ("Accounts payable",)),
    "current_assets": (r"(?:total\s+)?current\s+assets", ("Total current assets",)),
    "current_liabilities": (r"(?:total\s+)?current\s+liabilities", ("Total current liabilities",)),
    "operating_income": (
        r"(?:unadjusted\s+)?operating\s+(?:income|profit)|income\s+from\s+operations",
        ("Operating income", "Income from operations", "Operating profit", "Operating income (loss)"),
    ),
    "da": (
        r"depreciation\s+and\s+amortization|d&a",
        (
            "Depreciation and amortization",
            "Depreciation, depletion and amortization",
            "Depreciation and amortization expense",
        ),
    ),
    "capex": (
        r"capex|capital\s+expenditures?|purchases\s+of\s+property",
        (
            "Purchases of property, plant and equipment",
            "Capital expenditures",
            "Purchases of property and equipment",
            "Payments for property and equipment",
            "Capital expenditures, net",
            # Intel's 10-Qs: "Additions to property, plant, and equipment"; Microsoft's: "Additions to
            # property and equipment"
            "Additions to property, plant and equipment",
            "Additions to property and equipment",
        ),
    ),
    "dividends": (
        r"(?:cash\s+)?dividends(?:\s+paid)?",
        ("Dividends paid", "Cash dividends paid", "Dividends paid on common stock", "Dividends"),
    ),
    # The labels below were each read in the statements of two filings or more of different
    # companies (3M, Activision Blizzard, AMD, American Water Works, Coca-Cola, Corning).
    "receivables": (
        r"(?:net\s+)?(?:accounts|trade(?:\s+accounts)?)\s+receivables?|receivables",
        ("Accounts receivable, net", "Accounts receivable — net", "Trade accounts receivable", "Accounts receivable"),
    ),
    "operating_cash_flow": (
        r"(?:net\s+)?cash\s+(?:flows?\s+)?(?:provided\s+by\s+|from\s+)?operati(?:ng\s+activities|ons)|operating\s+cash\s+flows?",
        (
            "Net cash provided by operating activities",
            "Net cash provided by (used in) operating activities",
            "Net cash used in operating activities",
            "Net cash from operating activities",
        ),
    ),
    "interest_expense": (r"interest\s+expenses?", ("Interest expense", "Interest expense, net")),
    # "Selling, general and administrative expenses" (3M, Corning, Coca-Cola), "… administrative" (Apple's
    # 10-Qs), "Marketing, general and administrative" (AMD, Intel's 10-Qs)
    "sga": (
        r"sg&a|selling,?\s+general,?\s+(?:and|&)\s+administrative(?:\s+expenses?)?",
        (
            "Selling, general and administrative expenses",
            "Selling, general and administrative expense",
            "Selling, general and administrative",
            "Marketing, general and administrative",
        ),
    ),
    # "Research and development" (AMD, Apple's, Intel's and NVIDIA's 10-Qs), "Research, development and
    # related expenses" (3M), "Research, development and engineering expenses" (Corning)
    "rd": (
        r"r&d|research,?\s+(?:and\s+)?development(?:\s+and\s+(?:engineering|related))?(?:\s+expenses?)?",
        (
            "Research and development",
            "Research and development expenses",
            "Research, development and related expenses",
            "Research, development and engineering expenses",
        ),
    ),
    "equity": (
        r"(?:total\s+)?(?:(?:share|stock)holders'?\s+)?equity",
        ("Total equity", "Total shareholders' equity", "Total stockholders' equity", "Total shareholders’ equity"),
    ),
}
# Items whose labels vary past a list, as a pattern over the normalised label (``statements.normal``),
# tried after the labels. Dividends paid: "Dividends paid to shareholders" (3M), "Payment of dividends
# to stockholders" (Intel), "Payments for dividends and dividend equivalents" (Apple), "Common stock
# cash dividends paid" (Microsoft); not those received, declared or paid to noncontrolling interests.
LABEL_PATTERNS: dict[str, re.Pattern[str]] = {
    "net_income_common": re.compile(
        r"^net (?:income|earnings) attributable to (?!non ?controlling|minority|participating|preferred)(?!.* per\b)"
    ),
    "dividends": re.compile(
        r"^(?!.*\b(?:received|declared|payable|noncontrolling|minority|preferred|subsidiar\w*)\b)"
        r"(?=.*\bdividends?\b)(?=.*\b(?:paid|payments?)\b)"
    ),
}
# Items some statements write as two rows, with no row of their sum: (the rows' item names and
# labels). Depreciation and amortization: "Depreciation" and "Amortization of intangibles" in
# Intel's 10-Qs' cash flows, "Depreciation" and "Amortization of purchased intangibles" in
# Corning's 10-Ks'.
PARTS: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "da": (
        ("depreciation", ("Depreciation",)),
        ("amortization", ("Amortization of intangibles", "Amortization of purchased intangibles")),
    ),
}
# An item read as another where a statement has no row of its own for it
FALLBACK = {"net_income_common": "net_income"}
# An item's name as an answer shows it, where its key does not say it
SHOWN = {"net_income_common": "net income attributable to shareholders", "ppe": "net PP&E", "sga": "SG&A", "rd": "R&D"}
# Items whose figure a statement writes as an outflow in parentheses: the amount is its size.
OUTFLOWS = frozenset({"capex", "dividends", "interest_expense"})  # American Water Works: "Interest expense (433)"
