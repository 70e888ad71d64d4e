"""Where a filing's primary statements stand: each statement's title as 10-Ks and 10-Qs write
it, the words its page is searched by, and the statement each line item is read from
(``chat.computed`` reads the operands of a measure there)."""

from __future__ import annotations

import re

STATEMENT_HEAD = 8  # lines at the head of a page where a statement's title stands
STATEMENT_PAGES = 15  # pages of each document searched for a statement's title
# Each primary statement: the words its page is searched by (its title and its lines), and its title as 10-Ks and 10-Qs
# write it (3M: "Consolidated Statement of Cash Flows"; Activision Blizzard: "CONSOLIDATED BALANCE
# SHEETS"; Corning: "Consolidated Statements of Income"; Coca-Cola: "CONSOLIDATED STATEMENTS OF INCOME").
STATEMENTS: dict[str, tuple[str, re.Pattern[str]]] = {
    "income": (
        "consolidated statements of income operations earnings revenues net sales cost of sales operating income net income per share",
        re.compile(
            r"\bstatements?\s+of\s+(?:consolidated\s+)?(?:operations|income|earnings)\b|\bincome\s+statements?\b", re.I
        ),
    ),
    "balance": (
        "consolidated balance sheets total assets total current assets total liabilities current liabilities equity",
        re.compile(
            r"\bbalance\s+sheets?\b|\bstatements?\s+of\s+(?:consolidated\s+)?financial\s+(?:position|condition)\b", re.I
        ),
    ),
    "cash": (
        "consolidated statements of cash flows operating activities investing activities financing activities net cash",
        re.compile(r"\bstatements?\s+of\s+(?:consolidated\s+)?cash\s+flows?\b", re.I),
    ),
}
# What may stand before a statement's title on its own line ("CONDENSED CONSOLIDATED BALANCE SHEETS"):
# a title after other words is a sentence or a note naming the statement (3M's MD&A page "Individual
# amounts in the Consolidated Statement of Cash Flows exclude …", its "NOTE 7. Supplemental Balance
# Sheet Information"; Coca-Cola's "… our consolidated statement of income during the year …"; American
# Express's "PARENT COMPANY - CONDENSED STATEMENTS OF INCOME").
_TITLE_LEAD = re.compile(r"^[\W\d]*(?:(?:consolidated|condensed|combined)\W+)*$", re.I)
# The statement each line item is read from: a balance from the balance sheet (not the cash-flow
# statement's change in it), a flow from the income statement, cash paid from the cash flows.
ITEM_STATEMENT = {
    "revenue": "income",
    "cogs": "income",
    "operating_income": "income",
    "net_income": "income",
    "net_income_common": "income",
    "sga": "income",
    "rd": "income",
    "da": "cash",
    "capex": "cash",
    "dividends": "cash",
    "ppe": "balance",
    "total_assets": "balance",
    "inventory": "balance",
    "accounts_payable": "balance",
    "current_assets": "balance",
    "current_liabilities": "balance",
    "receivables": "balance",
    "equity": "balance",
    "operating_cash_flow": "cash",
    "interest_expense": "income",
}


def titled(head: str, title: re.Pattern[str]) -> bool:
    """True when a line of ``head`` is the statement's title: nothing but "Consolidated",
    "Condensed" or a number before it (what follows may be the company's name or "(Unaudited)")."""
    for line in head.splitlines():
        found = title.search(line)
        if found and _TITLE_LEAD.match(line[: found.start()]):
            return True
    return False
