"""Two made-up retailers' filings as real PDFs (``tests/pdfgen.py``): an earnings release of
Quillfeather Outfitters and a 10-Q of Bramblecrest Markets. Both speak of share repurchases
and store counts; Bramblecrest's uses "target" as a word. The names are invented so that no
rule can be keyed to them."""

from __future__ import annotations

from pathlib import Path

from tests.pdfgen import make_pdf

QUILLFEATHER = [
    "Quillfeather Outfitters, Inc. Reports Second Quarter Fiscal 2024 Results\n"
    "PORTLAND, Ore., August 21, 2024 -- Quillfeather Outfitters, Inc. (NYSE: QFO) today reported\n"
    "results for the second quarter of fiscal 2024, which ended August 3, 2024.\n"
    "Net sales for the second quarter were $2,104 million, up 3.1 percent from last year.\n"
    "Comparable sales at Quillfeather stores rose 2.4 percent.",
    "Capital returned to shareholders\n"
    "In the second quarter of fiscal 2024, Quillfeather repurchased 1.2 million shares\n"
    "for $96 million. In the fourth quarter of fiscal 2023, Quillfeather repurchased\n"
    "shares for $150 million. Quillfeather also paid dividends of $31 million.",
    "Store count\n"
    "Quillfeather ended the second quarter of fiscal 2024 with 412 stores in 38 states,\n"
    "after opening 9 new Quillfeather stores and closing 2 during the quarter.",
    "Outlook\n"
    "For fiscal 2024, Quillfeather expects net sales growth of 2 to 3 percent and\n"
    "earnings per share of $4.10 to $4.30. Quillfeather will host a call at 8 a.m.",
]

BRAMBLECREST = [
    "UNITED STATES\nSECURITIES AND EXCHANGE COMMISSION\nWashington, D.C. 20549\nFORM 10-Q\n"
    "For the quarterly period ended August 3, 2024\n"
    "BRAMBLECREST MARKETS CORPORATION\n"
    "(Exact name of registrant as specified in its charter)\n"
    "Title of each class Trading Symbol(s) Name of each exchange on which registered\n"
    "Common Stock BCM New York Stock Exchange",
    "Condensed Consolidated Statements of Operations\n"
    "Three Months Ended August 3, 2024: net sales of $5,880 million and operating income of\n"
    "$402 million. Bramblecrest Markets Corporation reports in one segment.\n"
    "Our target operating margin is 7 percent; we target steady growth.",
    "Share repurchases\n"
    "How much did we spend on share repurchases in the second quarter? During the second\n"
    "quarter of fiscal 2024, Bramblecrest spent $402 million on share repurchases and\n"
    "repurchased 3.1 million shares under the share repurchase program. Share repurchases\n"
    "in the fourth quarter of fiscal 2023 were $210 million. Bramblecrest meets its target\n"
    "leverage ratio.",
    "Stores\n"
    "At the end of the second quarter of fiscal 2024, Bramblecrest had 1,106 stores.\n"
    "How many stores did we have at the end of the quarter? Bramblecrest opened 14 stores.",
    "Management's discussion\n"
    "Bramblecrest comparable sales increased 1.8 percent in the second quarter. Our target\n"
    "customers responded to lower prices. Bramblecrest inventory was $6,010 million.",
]


def write_filings(folder: Path) -> list[Path]:
    """The two filings as PDFs in ``folder``: (earnings release, 10-Q)."""
    folder.mkdir(parents=True, exist_ok=True)
    release, quarterly = folder / "qfo-q2-2024-earnings.pdf", folder / "bcm-10q-q2-2024.pdf"
    make_pdf(QUILLFEATHER, release)
    make_pdf(BRAMBLECREST, quarterly)
    return [release, quarterly]
