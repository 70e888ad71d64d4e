"""The pieces of the chat page on their own: an answer as drawn from the session, the
source viewer, the timing line, the citation links, a stream interrupted by Stop.

Pages drawn with ``AppTest.from_function``; the viewer and the stream against a real
context (Chroma and SQLite in tmp_path, real PDFs from tests/pdfgen.py, extractive answers).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from streamlit.runtime.scriptrunner_utils.exceptions import StopException
from streamlit.testing.v1 import AppTest

from rag_core import Message, build_context, load_settings
from rag_core.chat import STOPPED_MARK
from tests.pdfgen import make_pdf
from tests.test_app import data_dir, plain, texts  # noqa: F401 (data_dir is a fixture)
from ui.answer import answer_markdown, timing_line
from ui.live import stream_text
from ui.markdown import inert_markdown
from ui.sources import group_sources, marked_markdown

SOURCES: list[dict[str, Any]] = [
    {"file": "orion.pdf", "page": 1, "score": 0.9, "text": "The Orion project launched in 2019 in Lisbon."},
    {"file": "orion.pdf", "page": 2, "score": 0.7, "text": "Its budget was 4 million euros."},
    {"file": "orion.pdf", "page": 1, "score": 0.6, "text": "Orion project report"},
    {"file": "notes.md", "page": None, "score": 0.5, "text": "Orion notes.", "heading": "Notes"},
]


# ============================================================================ an answer
def draw(message: Message, question: str | None = "Where?", **options: Any) -> AppTest:
    def page(message, question, options):  # runs as a script of its own: no annotations
        from ui.answer import render_answer

        render_answer(message, question, **options)

    at = AppTest.from_function(page, args=(message, question, options)).run()
    assert not at.exception, at.exception
    return at


def test_sources_are_grouped_by_file_and_page_in_citation_order() -> None:
    groups = group_sources(SOURCES)
    assert [(g.file, g.page, g.numbers) for g in groups] == [
        ("orion.pdf", 1, [1, 3]),
        ("orion.pdf", 2, [2]),
        ("notes.md", None, [4]),
    ]
    sections = [{"file": "a.md", "heading": h, "text": t} for h, t in (("A", "1"), ("B", "2"), ("A", "3"))]
    assert [(g.heading, g.numbers) for g in group_sources(sections)] == [("A", [1, 3]), ("B", [2])]  # per section
    message = Message("assistant", "Lisbon [1], 4 million euros [2].", sources=SOURCES, id=7)
    at = draw(message, session_id="s1")
    assert [plain(b.label) for b in at.button if b.key.startswith("src_")] == [
        "📄 orion.pdf · page 1 [1] [3]",
        "📄 orion.pdf · page 2 [2]",
        "📄 notes.md · Notes [4]",
    ]


def test_citation_markers_link_to_the_viewer_and_nothing_else() -> None:
    message = Message("assistant", "Lisbon [1]. Budget [2, 3]. Not a source [9]. `[1]`", sources=SOURCES, id=7)
    at = draw(message, session_id="s1")
    text = at.markdown[0].value
    assert "\\[[1](?session=s1&source=7-1)\\]" in text
    assert "\\[[2](?session=s1&source=7-2), [3](?session=s1&source=7-3)\\]" in text
    assert "\\[9\\]" in text and "`[1]`" in text  # out of range, or code: left as text
    assert inert_markdown("[1](javascript:x) [1]", cite=lambda n: None) == "1 \\[1\\]"


def test_an_answer_shows_its_notices_search_timing_and_copy() -> None:
    message = Message(
        "assistant",
        "It launched in **Lisbon** [1].",
        condensed_question="Where did Orion launch?",
        sources=SOURCES[:1],
        meta={
            "notices": ["Cohere rerank was skipped (timed out); passages are in retrieval order."],
            "timings": {"retrieve_s": 0.05, "first_token_s": 0.4, "total_s": 1.25},
        },
        id=3,
    )
    at = draw(message, follow_up=True)
    assert at.markdown[0].value == "It launched in **Lisbon** [1]."  # no session: no links
    assert any("Searched for: Where did Orion launch?" in c for c in texts(at.caption))
    assert "Cohere rerank was skipped" in at.info[0].value
    assert any(
        plain(c).startswith("⏱️ Answered in 1.2 s · retrieval 50 ms · first token 400 ms") for c in texts(at.caption)
    )
    copied = at.code[0].value
    assert copied.startswith("It launched in **Lisbon** [1].")
    assert "[1] orion.pdf, page 1: “The Orion project launched in 2019 in Lisbon.”" in copied
    assert answer_markdown("A [1].", SOURCES) == (
        "A [1].\n\nSources:\n\n"
        "[1] orion.pdf, page 1: “The Orion project launched in 2019 in Lisbon.”\n"
        "[2] orion.pdf, page 2: “Its budget was 4 million euros.”\n"
        "[3] orion.pdf, page 1: “Orion project report”\n"
        "[4] notes.md: “Orion notes.”\n"
    )


def test_a_stopped_answer_says_so_and_only_the_latest_has_controls() -> None:
    stopped = Message(
        "assistant", "The Orion project", "Where did Orion launch?", sources=SOURCES[:1], meta={"stopped": True}, id=4
    )
    at = draw(stopped, latest=True, follow_up=True)
    assert any("Stopped" in c for c in texts(at.caption))
    assert [b.key for b in at.button if b.key == "regenerate_4"] == ["regenerate_4"]
    assert at.text_area(key="rewrite_text_4").value == "Where did Orion launch?"  # the search, editable

    older = draw(stopped, latest=False, follow_up=True)
    assert not [b for b in older.button if b.key.startswith("regenerate_")]
    assert not older.text_area


def test_timing_line_names_each_step_the_path_and_the_model_loading() -> None:
    timings = {
        "condense_s": 0.41,
        "retrieve_s": 0.12,
        "rerank_s": 0.3,
        "first_token_s": 1.3,
        "total_s": 4.2,
        "tokens_per_s": 17.84,
        "model_load_s": 2.5,
    }
    served = {"llm": "local (qwen2.5-coder-1.5b)", "rerank": "cohere", "condense": "llm"}
    assert plain(timing_line(timings, served) or "") == (
        "⏱️ Answered in 4.2 s, including 2.5 s loading the model · condense 410 ms · retrieval 120 ms · "
        "rerank 300 ms · first token 1.3 s · 17.8 tokens/s · by local (qwen2.5-coder-1.5b) · rerank cohere"
    )
    first = {"retrieve_s": 0.1, "total_s": 10.0, "condense_s": 0.0, "model_load_s": 8.0}
    line = plain(
        timing_line(first, {"llm": "extractive", "rerank": "skipped: timed out", "condense": "first turn"}) or ""
    )
    assert line.startswith("⏱️ Answered in 10.0 s, including 8.0 s loading the model · retrieval 100 ms")
    assert "condense" not in line and line.endswith("by extractive · rerank skipped: timed out")
    edited = plain(timing_line({"total_s": 1.0, "model_load_s": 0.002}, {"condense": "edited"}) or "")
    assert edited == "⏱️ Answered in 1.0 s · rewrite edited"  # a client built in 2 ms is no model loading
    assert timing_line({}, {}) is None


def test_timing_line_says_how_many_figures_the_sources_do_not_hold() -> None:
    def line(checked: int, missing: int) -> str:
        return plain(
            timing_line({"total_s": 2.0, "figures_checked": checked, "figures_unsupported": missing}, {}) or ""
        )

    assert line(3, 1) == "⏱️ Answered in 2.0 s · 1 figure not found in the sources"
    assert line(3, 2) == "⏱️ Answered in 2.0 s · 2 figures not found in the sources"
    assert line(1, 0) == "⏱️ Answered in 2.0 s · 1 figure checked against the sources"
    assert line(0, 0) == "⏱️ Answered in 2.0 s"  # no figure in the answer: nothing to say


# ============================================================================ the viewer
ORION_PDF = make_pdf(
    [
        "Orion project report\nThe Orion project launched in 2019 in Lisbon.",
        "Finances\nIts budget was 4 million euros, approved by the board.",
    ]
)
NOTES = (
    b"# Field notes\n\nThe survey team arrived in March and set up camp near the ridge.\n\n"
    b"## Telescope\n\nThe Vega telescope stands in the Atacama desert in Chile. It was built by 40 engineers.\n\n"
    b"## Next\n\nThe next survey is planned for the autumn, weather permitting.\n"
)


def open_viewer(sources: list, n: int) -> AppTest:
    def page(sources, n):
        import streamlit as st

        from rag_core import build_context, load_settings
        from ui.sources import viewer_body

        state = st.session_state.setdefault("state", {"sources": sources, "n": n, "page": sources[n - 1]["page"]})
        viewer_body(build_context(load_settings()), state)

    at = AppTest.from_function(page, args=(sources, n), default_timeout=60).run()
    assert not at.exception, at.exception
    return at


@pytest.fixture
def indexed(data_dir: Path) -> list:  # noqa: F811
    ctx = build_context(load_settings())
    ctx.ingestion.ingest_bytes(ORION_PDF, "orion.pdf")
    ctx.ingestion.ingest_bytes(NOTES, "notes.md")
    budget = ctx.chat.retrieve("budget 4 million euros approved by the board", names=["orion.pdf"])
    vega = ctx.chat.retrieve("Where does the Vega telescope stand?", names=["notes.md"])
    page_two = next(s for s in budget if s["page"] == 2)
    assert "approved by the board" in page_two["text"] and "Atacama" in vega[0]["text"]
    return [page_two, vega[0]]


def test_the_viewer_shows_the_pdf_page_with_the_passage_and_pages_through(indexed: list) -> None:
    at = open_viewer(indexed, 1)
    assert at.markdown[0].value == "#### orion.pdf"
    assert len(at.get("image")) == 1
    assert "Page **2** of 2" in [m.value for m in at.markdown]
    assert any("highlighted on the page" in c for c in texts(at.caption))
    assert "approved by the board" in at.text[0].value
    assert at.button(key="viewer_next").proto.disabled

    at.button(key="viewer_prev").click().run()
    assert "Page **1** of 2" in [m.value for m in at.markdown]
    assert any("No passage of this answer is on this page" in c for c in texts(at.caption))


def test_the_viewer_marks_a_text_passage_in_its_surroundings(indexed: list) -> None:
    at = open_viewer(indexed, 2)
    assert at.markdown[0].value == "#### notes.md"
    [context] = [m.value for m in at.markdown if "yellow-background" in m.value]
    assert ":yellow-background[" in context and "Atacama desert" in context
    assert context.index("set up camp") < context.index(":yellow-background[")  # the text around it, too
    assert context.index("planned for the autumn") > context.rindex(":yellow-background[")


def test_the_viewer_says_when_the_document_is_gone(indexed: list) -> None:
    build_context(load_settings()).ingestion.delete("orion.pdf")
    at = open_viewer(indexed, 1)
    assert at.warning and "approved by the board" in at.text[0].value  # the passage as cited, still


def test_marked_text_stays_text() -> None:
    out = marked_markdown("before <b>", "a ] :red[x] *b*", "after ![p](http://e/p.png)")
    assert out.count(":yellow-background[") == 1
    assert "\\]" in out and "&#58;red" in out and "\\*b\\*" in out and "!\\[p\\]" in out and "&lt;b>" in out


# ============================================================================ Stop
class Interrupted:
    """Where the answer is drawn; Streamlit stops a run by raising from an ``st`` call."""

    def __init__(self, after: int) -> None:
        self.frames: list[str] = []
        self.after = after

    def markdown(self, text: str) -> None:
        self.frames.append(text)
        if len(self.frames) == self.after:
            raise StopException()


def test_stop_keeps_the_partial_answer_marked_as_stopped(indexed: list) -> None:
    ctx = build_context(load_settings())
    ctx.models.llm().delay = 0.01  # the extractive model, streaming word by word
    session = ctx.sessions.create("Stop")
    turn = ctx.chat.turn("What was the budget of the Orion project?", session.id)
    with pytest.raises(StopException):
        stream_text(turn, Interrupted(after=2))
    [question, answer] = ctx.sessions.messages(session.id)
    assert question.content == "What was the budget of the Orion project?"
    assert answer.meta["stopped"] is True
    assert answer.content.endswith(STOPPED_MARK)  # the engine's mark, in the text exports and the CLI show
    partial = answer.content.removesuffix(STOPPED_MARK).strip()
    full = ctx.chat.ask("What was the budget of the Orion project?").answer
    assert partial and full.startswith(partial) and partial != full


def test_the_passage_picker_shows_a_page_label_as_text(indexed: list) -> None:
    """A page label is the document's own text: drawn as Markdown, an image in it was
    fetched (a request to any address the PDF names), a link could be clicked."""
    hostile = [{**indexed[0], "page_label": "![t](http://evil.example/t.png)"}, indexed[1]]
    at = open_viewer(hostile, 1)
    options = at.segmented_control(key="viewer_pick").options
    assert options[0] == "\\[1\\] orion.pdf p. !\\[t\\]\\(`http://evil.example/t.png`\\)"
    assert plain(options[1]) == "[2] notes.md"
