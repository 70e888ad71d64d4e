"""The model's second look at the candidate pages (rag_core.retrieval.look): one line per page,
the pages the model names moved to the top, nothing asked where it cannot help. Real PDFs,
real Chroma, the hash embedding; the model is a fake that reads the prompt."""

from __future__ import annotations

import re
from typing import Any

from llama_index.core.llms import CompletionResponse
from llama_index.core.llms.callbacks import llm_completion_callback

from rag_core import build_context
from rag_core.prompts import PAGE_LOOK_MARKER
from rag_core.retrieval.look import describe_page, parse_picks, prompt_tokens
from tests.fakes import ScriptedLLM
from tests.pdfgen import make_pdf
from tests.test_pages import DISCUSSION, OTHER, STATEMENT

QUESTION = "What were Apple's total operating expenses in the quarter?"


class PageLooker(ScriptedLLM):
    """Names, in a page-look prompt, the page ``wanted`` ("page 3") when a line describes it,
    or answers ``reply`` ("fail": raises); any other prompt is answered as ScriptedLLM does."""

    wanted: str = ""
    reply: str | None = None

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kw: Any) -> CompletionResponse:
        if not prompt.endswith(PAGE_LOOK_MARKER):
            return super().complete(prompt, formatted, **kw)
        self.prompts.append(prompt)
        if self.reply == "fail":
            raise RuntimeError("model gone")
        if self.reply is not None:
            return CompletionResponse(text=self.reply)
        found = self.wanted and re.search(rf"^{re.escape(self.wanted)}:", prompt, re.MULTILINE)
        return CompletionResponse(text=self.wanted.split()[-1] if found else "none")


def looks(llm: PageLooker) -> list[str]:
    return [p for p in llm.prompts if p.endswith(PAGE_LOOK_MARKER)]


BALANCE = """CONDENSED CONSOLIDATED BALANCE SHEETS (Unaudited)
Cash and cash equivalents $ 20,535 $ 23,646
Inventories 6,820 4,946
Total assets 346,747 352,755
Total liabilities 290,020 302,083"""

CASH = """CONDENSED CONSOLIDATED STATEMENTS OF CASH FLOWS (Unaudited)
Depreciation and amortization 2,916 2,697
Payments for acquisition of property, plant and equipment (3,787) (2,803)
Repayments of commercial paper, net (1,996) (5,000)"""


def filing(path, pages: list[str]) -> None:
    """A filing: its cover, ``pages``, then a balance sheet and a cash-flow statement (the
    labels of other line items, so that a line item's words are rare among the pages)."""
    make_pdf(["Apple Inc.\nFORM 10-Q\nFor the quarterly period ended December 31, 2022", *pages, BALANCE, CASH], path)


def context(make_settings, tmp_path, name: str, llm: PageLooker, **overrides: Any):
    ctx = build_context(make_settings(top_k=2, data_dir=tmp_path / name, **overrides), llm=llm)
    ctx.ingestion.ingest_paths([tmp_path / "apple.pdf"])
    return ctx


def test_a_page_is_described_by_its_file_title_periods_and_row_labels():
    line = describe_page(4, [STATEMENT.replace("Three Months Ended", "Three Months Ended\nJuly 1,")])
    assert line.startswith("page 4: CONDENSED CONSOLIDATED STATEMENTS OF OPERATIONS")
    assert "Three Months Ended July 1," in line  # the period columns
    assert "rows: Net sales:" not in line and "Products; Services; Total net sales" in line
    assert len(line) <= 200
    # a page without a table: its first line (a heading as often as not)
    assert describe_page(2, [DISCUSSION]) == "page 2: Management discussion of the quarter"


def test_the_reply_names_at_most_two_shown_pages():
    assert parse_picks("4, 9", [9, 4, 20]) == [4, 9]
    assert parse_picks("Pages 3 and 3, then 1 and 2", [1, 2, 3]) == [3, 1]
    assert parse_picks("13, 0", [4, 9]) == []  # not a shown page
    assert parse_picks("None of them. 2", [2]) == []
    assert parse_picks("", [2]) == []
    assert prompt_tokens({"usage": {"prompt_tokens": 412}}) == 412
    assert prompt_tokens({"timings": {"prompt_n": 37}}) == 37
    assert prompt_tokens("no figures") is None


def test_the_page_the_model_names_is_moved_to_the_top(make_settings, tmp_path):
    filing(tmp_path / "apple.pdf", [DISCUSSION.replace("operating expenses", "total operating expenses"), STATEMENT])
    # the model names the balance sheet (page 4), which the search alone does not rank in the top 2
    off_llm, on_llm = PageLooker(), PageLooker(wanted="page 4")
    off = context(make_settings, tmp_path, "off", off_llm).chat.search(QUESTION)
    on = context(make_settings, tmp_path, "on", on_llm, page_look=8).chat.search(QUESTION)
    assert looks(off_llm) == []  # off: the model is not asked
    assert 4 not in [s["page"] for s in off.sources] and len({s["page"] for s in off.sources}) == 2
    [prompt] = looks(on_llm)
    assert '"apple.pdf"' in prompt and "\npage 3: CONDENSED CONSOLIDATED STATEMENTS OF OPERATIONS" in prompt
    assert "\npage 4: CONDENSED CONSOLIDATED BALANCE SHEETS" in prompt
    assert QUESTION in prompt and "never instructions" in prompt  # the pages are fenced as data
    assert [s["page"] for s in on.sources] == [4, off.sources[0]["page"]]  # the search's best stays second
    assert on.stats["page_look"]["picked"] == [["apple.pdf", 4]]
    assert on.stats["page_look"]["pages"] >= 3 and on.stats["page_look"]["prompt_tokens"] > 0


def test_no_look_where_it_cannot_help_and_none_changes_nothing(make_settings, tmp_path):
    filing(tmp_path / "apple.pdf", [DISCUSSION.replace("operating expenses", "total operating expenses"), STATEMENT])
    off = context(make_settings, tmp_path, "off", PageLooker()).chat.search(QUESTION)
    # the model finds no page for it: the passages stay as the search ranked them
    declining = PageLooker(reply="none")
    declined = context(make_settings, tmp_path, "none", declining, page_look=8).chat.search(QUESTION)
    assert len(looks(declining)) == 1
    assert [s["text"] for s in declined.sources] == [s["text"] for s in off.sources]
    assert declined.stats["page_look"]["picked"] == []
    # a failing model: the search is answered all the same
    broken = context(make_settings, tmp_path, "broken", PageLooker(reply="fail"), page_look=8).chat.search(QUESTION)
    assert [s["text"] for s in broken.sources] == [s["text"] for s in off.sources]
    assert "model gone" in broken.stats["page_look"]["error"]
    # a question naming no line item: not asked
    asking = PageLooker(wanted="page 3")
    plain = context(make_settings, tmp_path, "plain", asking, page_look=8).chat.search("Where do the employees work?")
    assert looks(asking) == [] and "page_look" not in plain.stats


def test_one_page_of_passages_is_not_looked_at(make_settings, tmp_path):
    make_pdf([STATEMENT + "\n" + OTHER], tmp_path / "apple.pdf")
    asking = PageLooker(wanted="page 1")
    found = context(make_settings, tmp_path, "one", asking, page_look=8).chat.search(QUESTION)
    assert {s["page"] for s in found.sources} == {1}
    assert looks(asking) == []


def test_the_pages_shown_are_those_of_the_document_ranked_first():
    from llama_index.core.schema import NodeWithScore, TextNode

    from rag_core.retrieval.look import one_subject, second_look
    from rag_core.retrieval.result import Retrieval

    def hit(doc: str, page: int) -> NodeWithScore:
        return NodeWithScore(node=TextNode(text=f"{doc} {page}", metadata={"doc_key": doc, "page": page}), score=1.0)

    found = Retrieval([hit("q3.pdf", 2), hit("q2.pdf", 7), hit("q3.pdf", 5)], {}, {"entities": ["Apple"]})
    llm = PageLooker(wanted="page 9")
    looked = second_look("Apple's net sales?", found, [hit("q2.pdf", 9), hit("q3.pdf", 9)], lambda k: [], llm, 3, 8)
    [prompt] = looks(llm)
    assert '"q3.pdf"' in prompt and "\npage 2:" in prompt and "\npage 9:" in prompt
    assert "q2.pdf" not in prompt and "page 7" not in prompt  # another quarter's filing: not the model's to choose
    assert [(h.node.metadata["doc_key"], h.node.metadata["page"]) for h in looked.hits] == [
        ("q3.pdf", 9),
        ("q3.pdf", 2),
        ("q2.pdf", 7),
    ]
    assert one_subject(found.stats) and one_subject({}) and not one_subject({"entities": ["Apple", "NVIDIA"]})
