"""One turn's figures (rag_core.chat.checking, wired in rag_core.chat.turn): the cell the
question asks for read first by the model, each figure of the answer checked against the
sources, marked where it stands when they do not hold it, and counted in the turn, the
stored message and the timing line. A real PDF, Chroma and SQLite; a scripted LLM."""

from __future__ import annotations

import pytest

from rag_core import build_context
from rag_core.evaluation.answers import summarise_figures
from tests.fakes import ScriptedLLM
from tests.pdfgen import make_pdf
from tests.test_figures_tables import ROWS_BY_LINE
from ui.answer import timing_line

QUARTER = "What was Acme's net income for the three months ended July 30, 2023?"
COVER = "ACME CORPORATION\nQuarterly Report on Form 10-Q\nFor the quarterly period ended July 30, 2023"


@pytest.fixture
def acme(make_settings, tmp_path):
    """A two-page filing (a cover, an income statement) indexed; a session to answer in."""
    llm = ScriptedLLM()
    ctx = build_context(make_settings(top_k=2), llm=llm)
    path = tmp_path / "2023 Q2 ACME.pdf"
    make_pdf([COVER, ROWS_BY_LINE], path)
    ctx.ingestion.ingest_file(path)
    return ctx, llm, ctx.sessions.create().id


def test_a_right_figure_is_checked_and_left_as_written(acme):
    ctx, llm, sid = acme
    written = "Acme's net income for the three months ended July 30, 2023 was $618 million [1]."
    llm.script(answers=[written])
    answered = ctx.chat.ask(QUARTER, session_id=sid)
    assert answered.answer == written
    assert (answered.figures_checked, answered.figures_unsupported) == (1, 0)
    stored = ctx.sessions.messages(sid)[-1]
    assert stored.content == written
    assert (stored.meta["figures_checked"], stored.meta["figures_unsupported"]) == (1, 0)
    assert "1 figure checked against the sources" in (timing_line(stored.meta["timings"], {}) or "")


def test_a_wrong_figure_is_marked_where_it_stands_and_the_table_says_what_it_is(acme):
    ctx, llm, sid = acme
    # $823 million is the six months' net income: on the cited page, but not the quarter's.
    llm.script(answers=["Acme's net income for the three months ended July 30, 2023 was $823 million [1]."])
    answered = ctx.chat.ask(QUARTER, session_id=sid)
    assert (answered.figures_checked, answered.figures_unsupported) == (1, 1)
    first, _, notes = answered.answer.partition("\n\n")
    assert first.startswith("Acme's net income for the three months ended July 30, 2023 was $823 million ⚠ (")
    assert "The table on p. 2 says: Net income, three months ended July 30, 2023: $ 618" in notes.replace(
        "$618", "$ 618"
    )
    stored = ctx.sessions.messages(sid)[-1]
    assert stored.content == answered.answer and stored.meta["figures_unsupported"] == 1
    line = timing_line(stored.meta["timings"], {}) or ""
    assert "1 figure not found in the sources" in line


def test_the_next_turn_reads_the_answer_as_written_not_the_marks_that_quote_the_sources(acme):
    """The marks quote the documents ("… is Net income, six months …"); document text reaches the
    model only fenced, as sources: the history holds the answer as the model wrote it, without the
    source numbers of its own turn (a rewrite copied one: "… in the nine months ended in [3]?")."""
    ctx, llm, sid = acme
    written = "Acme's net income for the three months ended July 30, 2023 was $823 million [1]."
    llm.script(answers=[written, "It was $1,350 million [1]."], condense=["What was Acme's revenue?"])
    marked = ctx.chat.ask(QUARTER, session_id=sid).answer
    assert "⚠" in marked and ctx.sessions.messages(sid)[-1].content == marked  # shown and stored marked
    ctx.chat.ask("How did it do on revenue?", session_id=sid)  # "it": the model rewrites
    plain = written.replace(" [1]", "")
    assert plain in llm.prompts[-1] and "[1]" not in llm.prompts[-1]  # the rewrite's prompt: as written, uncited
    assert all("⚠" not in p for p in llm.prompts)  # not the marks
    llm.script(answers=["Revenue was $1,350 million [1]."])
    ctx.chat.ask("What was Acme's revenue for the quarter ended July 30, 2023?", session_id=sid)  # self-contained
    history = [m.content for m in llm.chats[-1] if m.role.value == "assistant"]
    assert history[0] == plain and all("⚠" not in h for h in history)  # the answer's prompt: as written too


def test_the_cell_the_question_asks_for_is_the_first_evidence_the_model_reads(acme):
    ctx, llm, _ = acme
    llm.script(answers=["$618 million [1]."])
    ctx.chat.ask(QUARTER)
    prompt = llm.chats[-1][-1].content or ""
    cell = prompt.index("(found by the table's structure)")
    assert "Net income, three months ended July 30, 2023" in prompt[prompt.rfind("\n", 0, cell) : cell]
    assert cell < prompt.index("Operating income:") < prompt.index("Net income: Three Months")  # before the passages


def test_a_computed_figure_is_shown_as_computed_and_a_made_up_one_marked(acme):
    ctx, llm, _ = acme
    asked = "How much did Acme's net income grow in the three months ended July 30, 2023?"
    llm.script(answers=["Net income grew by $553 million, from $65 million to $618 million [1]."])
    answered = ctx.chat.ask(asked)
    assert "$553 million (computed: $618 million − $65 million)" in answered.answer and "⚠" not in answered.answer
    assert answered.figures_unsupported == 0
    llm.script(answers=["Net income grew by $571 million, from $65 million to $618 million [1]."])
    answered = ctx.chat.ask(asked)
    assert "$571 million ⚠ (not found in the sources)" in answered.answer
    assert (answered.figures_checked, answered.figures_unsupported) == (3, 1)


def test_a_refusal_has_no_figure_to_check(acme):
    ctx, llm, _ = acme
    answered = ctx.chat.ask("What was the Tesla revenue?")
    assert answered.figures_checked == 0 and "figures_checked" not in answered.timings
    assert llm.chats == []


def test_the_evaluation_counts_the_marked_answers_wrong_and_right():
    rows = [
        {"correct": False, "figures_checked": 2, "figures_unsupported": 1, "refused_answer": False},
        {"correct": False, "figures_checked": 1, "figures_unsupported": 0, "refused_answer": False},
        {"correct": True, "figures_checked": 1, "figures_unsupported": 0, "refused_answer": False},
        {"correct": True, "figures_checked": 0, "figures_unsupported": 0, "refused_answer": False},
    ]
    assert summarise_figures(rows) == {
        "figures_checked": 4,
        "figures_unsupported": 1,
        "wrong_answers_marked": 0.5,
        "right_answers_marked": 0.0,
    }
    assert summarise_figures([{"correct": True}]) == {}


def test_the_check_can_be_turned_off(make_settings, tmp_path):
    llm = ScriptedLLM()
    ctx = build_context(make_settings(top_k=2, check_figures=False), llm=llm)
    path = tmp_path / "2023 Q2 ACME.pdf"
    make_pdf([COVER, ROWS_BY_LINE], path)
    ctx.ingestion.ingest_file(path)
    llm.script(answers=["Acme's net income was $823 million [1]."])
    answered = ctx.chat.ask(QUARTER)
    assert answered.answer == "Acme's net income was $823 million [1]." and answered.figures_checked == 0
    assert "found by the table's structure" not in (llm.chats[-1][-1].content or "")


def test_a_note_comes_after_the_unit_of_its_figure(acme):
    ctx, llm, _ = acme
    llm.script(answers=["Acme employs 4,321 people [1]."])
    answered = ctx.chat.ask("How many people does Acme employ?")
    assert answered.answer == "Acme employs 4,321 people ⚠ (not found in the sources) [1]."


def test_a_check_that_fails_keeps_the_answer_as_written(acme, monkeypatch):
    import rag_core.chat.checking as checking

    def broken(*args, **kwargs):
        raise RuntimeError("a page the reader trips on")

    monkeypatch.setattr(checking, "verify_answer", broken)
    monkeypatch.setattr(checking, "find_cells", broken)
    ctx, llm, sid = acme
    llm.script(answers=["Acme's net income was $823 million [1]."])
    answered = ctx.chat.ask(QUARTER, session_id=sid)
    assert answered.answer == "Acme's net income was $823 million [1]." and answered.figures_checked == 0
    assert ctx.sessions.messages(sid)[-1].content == answered.answer


def _annual_report_page(path) -> None:
    """A company's annual report as a web page (no pages): its customers named in passing on
    several parts, its statement of operations at the end."""
    filler = " ".join(f"Table game number {i} is licensed to casinos across North America." for i in range(40))
    parts = ["<h1>GALAXY GAMING, INC.</h1><p>Annual report for the year ended December 31, 2021.</p>"]
    for n in range(4):
        parts.append(
            f"<p>Galaxy Gaming, Inc. licenses its table games. Caesars Entertainment is a customer ({n}). {filler}</p>"
        )
    parts.append(
        "<h2>CONSOLIDATED STATEMENTS OF OPERATIONS</h2><p>YEARS ENDED DECEMBER 31, 2021 AND 2020</p>"
        "<table><tr><td></td><td>2021</td><td>2020</td></tr>"
        "<tr><td>Total revenue</td><td>19,984,378</td><td>10,230,316</td></tr>"
        "<tr><td>Research and development</td><td>520,449</td><td>487,679</td></tr></table>"
    )
    path.write_text("<html><body>" + "".join(parts) + "</body></html>", encoding="utf-8")


def test_a_web_pages_figure_given_for_another_company_or_year_is_marked(make_settings, tmp_path):
    """A document without pages has its company from what it is about: a figure of Galaxy
    Gaming's report given as Caesars Entertainment's (a customer it names), or as another
    year's, is marked; Galaxy Gaming's own figure of that year is not."""
    llm = ScriptedLLM()
    ctx = build_context(make_settings(), llm=llm)
    path = tmp_path / "galaxy-10k.html"
    _annual_report_page(path)
    ctx.ingestion.ingest_file(path)
    sid = ctx.sessions.create().id
    llm.script(answers=["Caesars Entertainment's total revenue in 2021 was $19,984,378 [1]."])
    answered = ctx.chat.ask("What was Caesars Entertainment's total revenue in 2021?", session_id=sid)
    assert (answered.figures_checked, answered.figures_unsupported) == (1, 1)
    assert "is Galaxy Gaming, Inc.’s Total revenue" in answered.answer
    llm.script(answers=["Galaxy Gaming's total revenue in 2018 was $10,230,316 [1]."])
    answered = ctx.chat.ask("What was Galaxy Gaming's total revenue in 2018?", session_id=sid)
    assert (answered.figures_checked, answered.figures_unsupported) == (1, 1)
    assert "year ended December 31, 2020" in answered.answer
    llm.script(answers=["Galaxy Gaming's total revenue in 2021 was $19,984,378 [1]."])
    answered = ctx.chat.ask("What was Galaxy Gaming's total revenue in 2021?", session_id=sid)
    assert (answered.figures_checked, answered.figures_unsupported) == (1, 0)
    assert answered.answer == "Galaxy Gaming's total revenue in 2021 was $19,984,378 [1]."
    # whose figures a question asks for, as the check is told: only names no document is about
    components = ctx.chat.components
    assert components.strangers("What was Galaxy Gaming's total revenue in 2021?") == []
    assert components.strangers("What was the revenue of Caesars Entertainment?") == ["Caesars Entertainment"]
    assert components.strangers("What was total revenue in 2021?") == []
    # a name no document mentions, beside one they are about: the figure is not the passages'
    llm.script(answers=["Galaxy Gaming's total revenue in the Zorblax segment in 2021 was $19,984,378 [1]."])
    zorblax = "What was Galaxy Gaming's total revenue in the Zorblax segment in 2021?"
    answered = ctx.chat.ask(zorblax, session_id=sid)
    assert (answered.figures_checked, answered.figures_unsupported) == (1, 1)
    assert components.strangers(zorblax, {"unmentioned_names": ["Zorblax"]}) == ["Zorblax"]


def test_a_figure_the_answer_gives_for_another_period_is_not_marked_by_the_asked_period_s_cell(acme):
    """ "changed from 20.5% in FY2021 to 22.9% in FY2022": the table's cell for the period asked
    marks the answer's figure of that period, not the one the answer says is another's."""
    ctx, llm, sid = acme
    llm.script(
        answers=[
            "Acme's net income was $65 million for the three months ended July 31, 2022 and "
            "$700 million for the three months ended July 30, 2023 [1]."
        ]
    )
    answered = ctx.chat.ask(QUARTER, session_id=sid)
    assert "$65 million for" in answered.answer  # the other period's figure, as the table has it: unmarked
    assert "$700 million ⚠" in answered.answer and answered.figures_unsupported == 1
