"""Statement pages read as tables: the header orders PDFium writes, labels, sections, units."""

from __future__ import annotations

from rag_core.figures.headers import columns_of
from rag_core.figures.labels import Item, agreement, content, words
from rag_core.figures.tables import parse_tables

# One header per line group (the NVIDIA order): groups, then days, then years.
ROWS_BY_LINE = """ACME CORPORATION AND SUBSIDIARIES
CONDENSED CONSOLIDATED STATEMENTS OF INCOME
(In millions, except per share data)
(Unaudited)
Three Months Ended Six Months Ended
July 30, July 31, July 30, July 31,
2023 2022 2023 2022
Revenue $ 1,350 $ 670 $ 2,070 $ 1,499
Cost of revenue 404 378 658 664
Gross profit 946 292 1,412 835
Operating expenses
Research and development 204 182 391 344
Sales, general and administrative 62 59 125 118
Total operating expenses 266 241 516 462
Operating income 680 51 896 373
Interest expense (6) (6) (13) (13)
Net income $ 618 $ 65 $ 823 $ 227
Net income per share:
Basic $ 2.50 $ 0.26 $ 3.33 $ 0.91
Diluted $ 2.48 $ 0.26 $ 3.30 $ 0.90
Weighted average shares used in per share computation:
Basic 247 249 247 250
"""

# Each group with its own day line, the years last (the Amazon order).
GROUPS_THEN_YEARS = """CONSOLIDATED STATEMENTS OF OPERATIONS
(in millions, except per share data)
Three Months Ended
June 30,
Six Months Ended
June 30,
2022 2023 2022 2023
Net product sales $ 565 $ 590 $ 1,130 $ 1,160
Total net sales 1,212 1,343 2,376 2,617
"""

# Day and year of each column on their own lines (the Apple order).
COLUMN_BY_COLUMN = """CONDENSED CONSOLIDATED STATEMENTS OF OPERATIONS (Unaudited)
(In millions, except number of shares which are reflected in thousands and per share amounts)
Three Months Ended Nine Months Ended
July 1,
2023
June 25,
2022
July 1,
2023
June 25,
2022
Net sales:
Products $ 605 $ 633 $ 2,309 $ 2,452
Services 212 196 628 589
Total net sales 817 829 2,937 3,041
Cost of sales:
Products 391 414 1,466 1,550
Total cost of sales 453 470 1,650 1,714
Gross margin 364 358 1,287 1,326
Shares used in computing earnings per share:
Basic 15,697,614 16,162,945 15,792,497 16,277,824
"""

# An MD&A table: change columns between the periods, "$" and "%" on their own lines.
WITH_CHANGES = """Operating income by Reportable Segments
Three Months Ended Six Months Ended
July 30,
2023
July 31,
2022
$
Change
%
Change
July 30,
2023
July 31,
2022
$
Change
%
Change
($ in millions)
Compute & Networking $ 672 $ 81 $ 591 725 % $ 888 $ 242 $ 646 267 %
Graphics 121 65 56 84 % 225 313 (88) (28)%
Total $ 680 $ 51 $ 629 1,233 % $ 896 $ 373 $ 523 140 %
"""

BALANCE = """BALANCE SHEETS
(In millions) (Unaudited)
September 30,
2023
June 30,
2023
Current assets:
Cash and cash equivalents $ 804 $ 347
Accounts receivable, net of allowance for doubtful accounts of $512 and $650 369 486
Total current assets 2,075 1,842
"""


def cells_of(text: str, label: str) -> list[tuple[str, str]]:
    for table in parse_tables(text):
        for row in table.rows:
            if row.item.label == label:
                return [
                    (c.number.clean if c.number else "—", c.column.describe() if c.column else "") for c in row.cells
                ]
    raise AssertionError(f"no row {label!r}")


def test_groups_days_and_years_on_their_own_lines():
    (table,) = parse_tables(ROWS_BY_LINE)
    assert table.title == "CONDENSED CONSOLIDATED STATEMENTS OF INCOME"
    assert (table.unit, table.scale) == ("millions", 1e6)
    assert cells_of(ROWS_BY_LINE, "Net income") == [
        ("$618", "three months ended July 30, 2023"),
        ("$65", "three months ended July 31, 2022"),
        ("$823", "six months ended July 30, 2023"),
        ("$227", "six months ended July 31, 2022"),
    ]
    assert cells_of(ROWS_BY_LINE, "Interest expense")[0] == ("(6)", "three months ended July 30, 2023")


def test_sections_per_share_amounts_and_share_counts():
    (table,) = parse_tables(ROWS_BY_LINE)
    rows = {(r.item.label, r.item.section): r for r in table.rows}
    rd = rows[("Research and development", "Operating expenses")]
    assert rd.cells[0].scale == 1e6
    eps = rows[("Diluted", "Net income per share:")]
    assert eps.cells[0].scale == 1.0  # per share: no unit applies
    shares = rows[("Basic", "Weighted average shares used in per share computation:")]
    assert shares.cells[0].scale == 1e6  # a count of shares, in millions here
    assert rows[("Total operating expenses", "Operating expenses")]  # a total closes its section
    assert ("Operating income", "") in rows


def test_each_group_with_its_day_years_last():
    assert [c for _, c in cells_of(GROUPS_THEN_YEARS, "Total net sales")] == [
        "three months ended June 30, 2022",
        "three months ended June 30, 2023",
        "six months ended June 30, 2022",
        "six months ended June 30, 2023",
    ]


def test_column_by_column_and_a_unit_for_shares():
    assert cells_of(COLUMN_BY_COLUMN, "Total net sales")[2] == ("2,937", "nine months ended July 1, 2023")
    (table,) = parse_tables(COLUMN_BY_COLUMN)
    sections = [(r.item.label, r.item.section.rstrip(":")) for r in table.rows if r.item.label == "Products"]
    assert sections == [("Products", "Net sales"), ("Products", "Cost of sales")]
    basic = next(r for r in table.rows if r.item.label == "Basic")
    assert basic.cells[0].scale == 1e3  # "number of shares which are reflected in thousands"


def test_change_columns_between_periods():
    got = cells_of(WITH_CHANGES, "Compute & Networking")
    assert got[0] == ("$672", "three months ended July 30, 2023")
    assert [c for _, c in got[2:4]] == ["$ change", "% change"]
    assert got[4] == ("$888", "six months ended July 30, 2023")
    (table,) = parse_tables(WITH_CHANGES)
    assert table.title == "Operating income by Reportable Segments"


def test_a_date_alone_is_a_balance_and_numbers_inside_a_label_stay_in_it():
    assert cells_of(BALANCE, "Cash and cash equivalents")[0] == ("$804", "as of September 30, 2023")
    (table,) = parse_tables(BALANCE)
    receivable = next(r for r in table.rows if r.item.label.startswith("Accounts receivable"))
    assert [c.number.clean for c in receivable.cells if c.number] == ["369", "486"]


def test_one_line_header_with_one_day():
    assert [c.describe() for c in columns_of("Three Months Ended September 30, 2023 2022")] == [
        "three months ended September 30, 2023",
        "three months ended September 30, 2022",
    ]


SEGMENTS = """Three Months Ended
June 30,
Six Months Ended
June 30,
2022 2023 2022 2023
North America
Net sales $ 744 $ 825 $ 1,436 $ 1,594
Operating income (loss) $ (6) $ 32 $ (21) $ 41
International
Net sales $ 270 $ 296 $ 558 $ 588
Operating activities:
Deferred revenue 12 13 24 25
"""


def test_a_label_repeated_under_sections_needs_its_section():
    (table,) = parse_tables(SEGMENTS)
    rows = {(r.item.label, r.item.section): r.item for r in table.rows}
    assert rows[("Net sales", "International")].shared
    assert rows[("Net sales", "International")].qualifiers() == {"international"}
    assert rows[("Deferred revenue", "Operating activities:")].qualifiers() == {"deferred"}  # one of its kind


def test_prose_is_not_a_table():
    text = "We had 29,600 employees as of July 30, 2023, up from 26,000 a year ago, in 36 countries.\n"
    assert parse_tables(text) == []


def test_line_items_fold_their_common_names():
    assert words("Total net sales") == ["total", "§revenue"]
    assert "§rd" in words("R&D expenses")
    assert "§operating_cash_flow" in words("Cash generated by operating activities")
    assert content("Inventories") == {"inventory"}


def test_a_row_agrees_only_with_the_item_a_claim_names():
    claim = content("NVIDIA's net income for the quarter was")
    assert agreement(claim, Item("Net income")) == "agree"
    assert agreement(claim, Item("Operating income")) == "conflict"
    assert agreement(claim, Item("Compute & Networking", "", "Operating income by Reportable Segments")) == "conflict"
    total_sales = content("Amazon's total net sales were")
    assert agreement(total_sales, Item("Net sales", "North America", shared=True)) == "conflict"  # a segment's
    assert agreement(total_sales, Item("Net sales", "Consolidated")) == "agree"
    assert agreement(content("Products net sales"), Item("Products", "Cost of sales:")) == "conflict"
    assert agreement(content("It was"), Item("Operating income")) == "neutral"


# An HTML filing's statement, as the HTML loader writes a table (cells joined by " | ", the "$" and
# the ")" of a figure in cells of their own), under a title that names the years once more.
HTML_CASH_FLOWS = """GALAXY GAMING, INC.
CONSOLIDATED STATEMENTS OF CASH FLOWS
YEARS ENDED December 31, 2021 AND 2020
2021 | | | 2020 |
Net income (loss) | | $ | 2,111,812 | | | $ | (2,208,887 | )
Adjustments to reconcile net income (loss) to net cash provided by (used in) operating activities: | | | | | | | |
Depreciation and amortization | | | 2,858,991 | | | | 2,222,042 |
Gross margin | | 45.2 | % | | 41.0 | %"""


def test_an_html_tables_rows_and_a_title_naming_its_years_again():
    from rag_core.chat.tables import columns, label_row, units
    from rag_core.figures.tables import unpipe

    assert (
        unpipe("Net income (loss) | | $ | 2,111,812 | | | $ | (2,208,887 | )")
        == "Net income (loss) $2,111,812 $(2,208,887)"
    )
    assert unpipe("Gross margin | | 45.2 | % | | 41.0 | %") == "Gross margin 45.2% 41.0%"
    assert unpipe("Revenue $ 1,350 $ 670") == "Revenue $ 1,350 $ 670"  # no cells: as it is
    (table,) = parse_tables(HTML_CASH_FLOWS)
    # two columns, not four: the title's "2021 AND 2020" are the columns' years, named again
    assert [c.describe() for c in table.columns] == ["year ended December 31, 2021", "year ended December 31, 2020"]
    net = table.rows[0]
    assert net.item.label == "Net income (loss)"
    assert [(c.number.value if c.number else None, c.column.describe() if c.column else "") for c in net.cells] == [
        (2111812.0, "year ended December 31, 2021"),
        (-2208887.0, "year ended December 31, 2020"),
    ]
    assert [r.item.label for r in table.rows] == ["Net income (loss)", "Depreciation and amortization", "Gross margin"]
    # the same row as the answering model reads it
    headers = HTML_CASH_FLOWS.splitlines()[1:4]
    assert label_row(HTML_CASH_FLOWS.splitlines()[4], columns(headers), units(headers)) == (
        "Net income (loss): YEARS ENDED December 31, 2021: $2,111,812; YEARS ENDED December 31, 2020: $(2,208,887)"
    )
    # a title's years still make the columns where no other line names them
    assert len(columns_of("For the years ended December 31, 2021 and 2020")) == 2


# A datasheet's tables as an HTML page writes them: columns named by a header row of words.
DATASHEET = """Chemical composition, % of grade SNB22-3
C | Si | Mn | P | S | Cr | Mo
0.39 - 0.46 | 0.2 - 0.35 | 0.65 - 1.1 | max 0.025 | max 0.025 | 0.75 - 1.2 | 0.15 - 0.25
Mechanical properties of grade SNB22-3
Assortment | Yield point or Proof stress | Tensile strength | Elongation | Reduction of area | Charpy impact strength
- | N/mm 2 | N/mm 2 | % | % | J/cm 2
Bars | 890 | 1000 | 12 | 40 |
Hardness of grade SNB22-3
- | Brinell HBW / HB | Rockwell C HRC | Rockwell B HRBS / HRB | Vickers HV
SNB22-3 | 293-375 | | |
Classification: | Structural steel Chromium molybdenum steel
Standards: | | JIS G 4108 : Alloy steel bars for special application bolting materials"""


def test_a_grids_figures_belong_to_the_columns_its_header_row_names():
    from rag_core.figures.grids import read_row

    lines = DATASHEET.splitlines()
    bars = read_row(lines[6], lines[:6])
    assert bars is not None and bars.label == "Bars"
    assert [(c.column, c.value, c.unit) for c in bars.cells] == [
        ("Yield point or Proof stress", "890", "N/mm 2"),
        ("Tensile strength", "1000", "N/mm 2"),
        ("Elongation", "12", "%"),
        ("Reduction of area", "40", "%"),
    ]
    assert all(lines[6][c.offset :].startswith(c.value) for c in bars.cells)
    chem = read_row(lines[2], lines[:2])  # no label cell; the title says the unit: "% of"
    assert chem is not None and chem.label == "" and (chem.cells[5].column, chem.cells[5].value) == ("Cr", "0.75 - 1.2")
    assert {c.unit for c in chem.cells} == {"%"}
    # no grid: header lines, a form's label and text, a row with no header of words above it
    assert all(read_row(lines[i], lines[:i]) is None for i in (1, 4, 5, 10, 11))
    assert read_row("Bars | 890 | 1000", []) is None
    assert read_row("Revenue | 2023 | 2022", []) is None
    # the figure check reads each cell as an item of its own: its column, of its row
    rows = [r for t in parse_tables(DATASHEET) for r in t.rows]
    tensile = next(r for r in rows if r.item.label == "Tensile strength")
    assert tensile.item.section == "Bars" and [c.number.value for c in tensile.cells] == [1000.0]
    chromium = next(r for r in rows if r.item.label == "Cr")
    assert [(c.number.value, c.number.percent) for c in chromium.cells] == [(0.75, True), (1.2, True)]
    hardness = next(r for r in rows if r.item.label == "Brinell HBW / HB")
    assert hardness.item.section == "SNB22-3" and hardness.cells[0].number.value == 293.0


def test_columns_named_by_fiscal_quarter_and_a_title_that_names_one():
    release = (
        "Q3 FY24 summary\n($ in millions, except earnings per share)\nQ3 FY24 Q2 FY24 Q3 FY23 Q/Q Y/Y\n"
        "Revenue $18,120 $13,507 $5,931 34% 206%"
    )
    (table,) = parse_tables(release)
    assert table.title == "Q3 FY24 summary"  # a title naming a quarter is no column
    assert [c.describe() for c in table.columns] == ["Q3 2024", "Q2 2024", "Q3 2023", "Q/Q change", "Y/Y change"]
    assert [c.number.value for c in table.rows[0].cells] == [18120.0, 13507.0, 5931.0, 34.0, 206.0]
    assert table.scale == 1e6


# A paper's results table as PDF text: the row labels' headers, then one name per figure; a
# group column ("Solo", "Joint") written on its group's first row, or on a line of its own
BENCHMARKS = """Table 3: End-to-end scores
Setting System KQ LoreQA WBQ FACT SPaRC
Solo Okapi+Reader (Ash et al., 2018) 21.5 44.1 15.7 22.3 31.2
Solo HEDGE (Ng et al., 2019) 35.3 47.0 38.4 31.1 19.2
Solo
Okapi 30.6 50.4 27.9 23.9 37.1
Dense 42.5 55.8 33.6 26.9 28.8
Okapi+Dense 38.0 56.0 36.2 29.0 35.7
Joint Dense 42.5 55.8 41.4 48.4 23.1
Okapi+Dense 37.8 58.9 40.1 51.6 34.8
Table 3 caption: copied scores are from the cited papers, ours below them.
"""


def test_columns_a_line_of_names_heads_are_the_figures_names():
    (table,) = parse_tables(BENCHMARKS)
    assert [c.describe() for c in table.columns] == ["KQ", "LoreQA", "WBQ", "FACT", "SPaRC"]
    cells = {
        (r.item.section, r.item.label, c.column.describe()): c.number.clean
        for r in table.rows
        for c in r.cells
        if c.number and c.column
    }
    assert cells[("Solo", "HEDGE (Ng et al., 2019)", "FACT")] == "31.1"
    assert cells[("Solo", "Okapi+Dense", "WBQ")] == "36.2"
    # the group written once, on its first row: the row after it is the Joint one, not Solo's
    assert cells[("Joint", "Dense", "FACT")] == "48.4"
    assert cells[("Joint", "Okapi+Dense", "WBQ")] == "40.1"


RETRIEVAL = (
    "Training Method Top-5 Top-50\n"
    "KQ LoreQA WBQ KQ LoreQA WBQ\n"
    "None Okapi 59.1 66.9 55.0 73.7 76.7 71.1\n"
    "Solo Dense 78.4 79.4 73.2 85.4 85.0 81.4\n"
    "Okapi + Dense 76.6 79.8 71.0 83.8 84.5 80.5\n"
    "Joint Dense 79.4 78.8 75.0 86.0 84.7 82.9\n"
    "Okapi + Dense 78.0 79.9 74.7 83.9 84.4 82.3\n"
)


def test_names_repeated_in_groups_take_the_group_the_line_above_names():
    """The groups' line names the row labels' two columns too ("Training Method"): a label
    under two groups ("Solo Dense", "Joint Dense") tells the group column, and the rows
    after each are in its group."""
    (table,) = parse_tables(RETRIEVAL)
    assert [c.describe() for c in table.columns][2:4] == ["Top-5 WBQ", "Top-50 KQ"]
    assert [(c.number.clean, c.column.describe()) for c in table.rows[1].cells][3] == ("85.4", "Top-50 KQ")
    assert [(r.item.section, r.item.label) for r in table.rows] == [
        ("None", "Okapi"),  # the first row of a table with a group column starts a group too
        ("Solo", "Dense"),
        ("Solo", "Okapi + Dense"),
        ("Joint", "Dense"),
        ("Joint", "Okapi + Dense"),
    ]


def test_words_that_may_pair_into_one_column_name_no_column():
    """Plain words may be two to a column ("Operating Leases Finance Leases Total" over three
    figures), and a line of as many names as figures may have one spanning two ("Dataset Train
    Dev Test" over four): neither names its figures' columns. A word glued to a number by a
    hyphen ("COVID-19", "Top-100") is no cell."""
    leases = parse_tables("Operating Leases Finance Leases Total\nGross lease liabilities $66,269 $25,866 $92,135\n")
    assert all(c.column is None for t in leases for r in t.rows for c in r.cells)
    counts = parse_tables("Dataset Train Dev Test\nKQ 79,168 58,880 8,757 3,610\nLoreQA 78,785 60,413 8,837 11,313\n")
    assert all(c.column is None for t in counts for r in t.rows for c in r.cells)
    (table,) = parse_tables("Revenue 100 200\nPartners saw disruptions during the COVID-19\nMethod Top-20 Top-100\n")
    assert [r.item.label for r in table.rows] == ["Revenue"]


# A table whose row labels have headers of their own ("#N", "IB"), its caption under it
TRAINING = (
    "Type #N IB Top-5 Top-20 Top-100\n"
    "Random 7 ✗ 47.0 64.3 77.8\n"
    "Okapi 7 ✗ 50.0 63.3 74.8\n"
    "Gold 127 ✓ 55.8 73.0 83.1\n"
    "Table 3: Comparison of training schemes, measured as top-k retrieval accuracy on\n"
    "LoreQA (development set). #N: number of negative examples.\n"
    "Our experiments on LoreQA show that the gold passages help.\n"
)


def test_a_tables_caption_is_read_with_it_and_its_label_columns_may_be_any_words():
    (table,) = parse_tables(TRAINING)
    assert [c.describe() for c in table.columns] == ["Top-5", "Top-20", "Top-100"]
    assert table.caption == (
        "Table 3: Comparison of training schemes, measured as top-k retrieval accuracy on LoreQA (development set)."
    )
    assert table.title == "Table 3" and [r.item.label for r in table.rows] == ["Random 7 ✗", "Okapi 7 ✗", "Gold 127 ✓"]


def test_one_row_under_a_line_of_names_is_no_table_of_them():
    """A cover page: "QUARTERLY REPORT FORM 10-Q" over "For the Quarterly Period Ended
    September 30, 2022": one line with two numbers is no row of a "FORM" and a "10-Q" column."""
    text = (
        "QUARTERLY REPORT FORM 10-Q\nFor the Quarterly Period Ended September 30, 2022\nCommission File No. 000-22513\n"
    )
    assert all(c.column is None for t in parse_tables(text) for r in t.rows for c in r.cells)


OCR_TABLE = """Processing total chunks mean chunks per document (std) tables mean (std)
Base 128 64,058 800.73 (484.11) N/A
Base 256 32,051 400.64 (242.04) N/A
Base 512 16,046 200.58 (121.01) N/A
Chipper 20,843 260.57 (145.80) 96.20 (57.53)
"""


def test_rows_that_share_a_label_and_differ_by_a_number_first_are_named_by_it():
    """An OCR'd table ("Base 128", "Base 256"): the number is the row's name, not its first
    figure; "N/A" is a cell that holds nothing."""
    (table,) = parse_tables(OCR_TABLE)
    assert [r.item.label for r in table.rows] == ["Base 128", "Base 256", "Base 512", "Chipper"]
    assert [c.number.text if c.number else None for c in table.rows[1].cells] == ["32,051", "400.64", "(242.04)", None]
    # the same label under two sections is two items, its first figures figures
    twice = "Cash equivalents:\nGovernment debt 233 297 530\nShort-term investments:\nGovernment debt 49 8,652 8,701\n"
    assert [r.item.label for r in parse_tables(twice)[0].rows] == ["Government debt", "Government debt"]
    totals = "Segment A 10 20\nTotal 12 30\nSegment B 5 6\nTotal 15 36\n"
    assert [r.item.label for r in parse_tables(totals)[0].rows if r.item.label.startswith("Total")] == [
        "Total",
        "Total",
    ]
