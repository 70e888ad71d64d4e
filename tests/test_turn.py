"""One answer as one object (rag_core.chat.turn): its phases, the model's load in its
timings, the answer it stored, its follow-up questions. Scripted LLM, hash embedding."""

from __future__ import annotations

import pytest

from rag_core import build_context
from tests.fakes import ScriptedLLM

QUESTION = "How many litres per minute does the Zephyr pump deliver?"


class LoadingLLM(ScriptedLLM):
    """A scripted model with weights to load, as the local model has: the loader loads it once."""

    def load(self) -> None:
        """Nothing to read from disk: that the loader calls it, once, is what counts."""


@pytest.fixture
def local(make_settings, three_docs):
    """The ``local`` provider over the three documents, its model not loaded yet."""
    llm = LoadingLLM()
    ctx = build_context(make_settings(llm_provider="local", top_k=1), llm=llm)
    ctx.ingestion.ingest_file(three_docs / "zephyr.pdf")
    return ctx, llm


def test_the_turn_loads_the_model_behind_a_progress_callback_and_times_the_wait(local):
    ctx, llm = local
    sid = ctx.sessions.create().id
    turn = ctx.chat.turn(QUESTION, sid)
    assert turn.sources and turn.model_pending and "model_load_s" not in turn.timings  # searched, not loaded
    heard: list[str] = []
    waited = turn.load_model(progress=heard.append)
    assert heard == ["Loading the local model into memory…"] and not turn.model_pending
    llm.script(answers=["It delivers 42 litres per minute [1]."])
    answered = turn.result()
    assert answered.timings["model_load_s"] == round(waited, 3) <= answered.timings["total_s"]
    assert ctx.sessions.messages(sid)[-1].meta["timings"]["model_load_s"] == answered.timings["model_load_s"]
    # The next turn finds the model loaded: nothing to wait for, nothing to report.
    again = ctx.chat.turn("What battery does the Zephyr pump run on?", sid)
    assert not again.model_pending and again.load_model() == 0.0
    assert "model_load_s" not in again.result().timings


def test_a_turn_run_to_the_end_loads_the_model_itself_when_it_needs_it(local):
    ctx, llm = local
    llm.script(answers=["42 litres per minute [1]."])
    answered = ctx.chat.ask(QUESTION)
    assert "model_load_s" in answered.timings and ctx.models.llm_ready
    assert answered.timings["model_load_s"] <= answered.timings["first_token_s"]


def test_a_turn_that_needs_no_model_does_not_load_it(local):
    ctx, llm = local
    answered = ctx.chat.ask("How many litres per minute does the Tesla pump deliver?")
    assert answered.sources == [] and answered.answer.startswith("The documents don't mention Tesla")
    assert not ctx.models.llm_ready and "model_load_s" not in answered.timings and llm.chats == []


def test_the_turn_knows_the_answer_it_stored(ctx, three_docs, llm):
    ctx.ingestion.ingest_paths([three_docs])
    sid = ctx.sessions.create().id
    llm.script(answers=["It delivers 42 litres per minute [1]."])
    turn = ctx.chat.turn(QUESTION, sid)
    assert turn.stored is None  # not before the words end
    answered = turn.result()
    [question, stored] = ctx.sessions.messages(sid)
    assert turn.stored is not None and turn.stored.id == stored.id and stored.id > question.id
    assert stored.content == answered.answer == turn.stored.content
    assert stored.sources == answered.sources and stored.meta["preview"] == turn.preview
    one_off = ctx.chat.turn(QUESTION)
    one_off.result()
    assert one_off.stored is None and len(ctx.sessions.messages(sid)) == 2  # a one-off is not stored


def test_follow_ups_come_from_the_sources_of_the_turn_not_after_a_stop(local):
    ctx, llm = local
    sid = ctx.sessions.create().id
    llm.script(answers=["It delivers 42 litres per minute [1]."])
    turn = ctx.chat.turn(QUESTION, sid)
    assert turn.follow_ups() == []  # no answer yet
    answered = turn.result()
    # Capacity (page 2) was just answered: the next section is offered, as the suggestions rule it.
    assert turn.follow_ups() == ["What does the section on Safety say?"]
    assert turn.follow_ups() == ctx.suggestions.follow_ups(QUESTION, answered.answer, answered.sources)
    llm.script(answers=["The pump delivers forty two litres per minute at full speed."])
    stopped = ctx.chat.turn(QUESTION, sid)
    for _ in stopped:
        stopped.stop()
    assert stopped.answered is not None and stopped.answered.stopped and stopped.follow_ups() == []


def test_a_turn_given_up_for_the_next_question_is_answered_as_stopped_and_the_order_holds(ctx, three_docs, llm):
    """A new question typed while the last one is still being prepared interrupts it before its
    first word: the interrupted one gets a stopped answer saying so, so the conversation stays
    question, answer (before, the next question followed an unanswered one)."""
    ctx.ingestion.ingest_paths([three_docs])
    sid = ctx.sessions.create().id
    first = ctx.chat.turn(QUESTION, sid)
    first.abandon()  # what the page does when a rerun interrupts it before the words
    first.abandon()  # twice (a second interruption) stores nothing more
    llm.script(answers=["It delivers 42 litres per minute [1]."])
    ctx.chat.turn("And its capacity?", sid).result()
    stored = ctx.sessions.messages(sid)
    assert [m.role for m in stored] == ["user", "assistant", "user", "assistant"]
    assert stored[1].content.startswith("No answer: it was stopped before it began") and stored[1].meta["stopped"]
    assert stored[3].content.startswith("It delivers 42 litres")
    failed = ctx.chat.turn("A third question?", sid)
    failed.close()  # a failure keeps the question unanswered, for Retry
    assert [m.role for m in ctx.sessions.messages(sid)][-2:] == ["assistant", "user"]


def test_a_follow_up_made_to_stand_alone_is_asked_of_the_model_as_it_stands(ctx, three_docs, llm):
    """ "And for the quarter ended March 31, 2023?" after a question about the Zephyr pump: the
    answering prompt is the rewrite alone, without the conversation (a small model given the bare
    follow-up after the conversation repeats the last answer); a self-contained follow-up, and a
    first turn, as typed after the conversation."""
    ctx.ingestion.ingest_paths([three_docs])
    sid = ctx.sessions.create().id
    llm.script(answers=["42 litres per minute [1].", "Not stated [1].", "Steamed [1]."])
    ctx.chat.turn(
        "How many litres per minute does the Zephyr pump deliver in the quarter ended June 30, 2023?", sid
    ).result()
    follow = ctx.chat.turn("And for the quarter ended March 31, 2023?", sid)
    follow.result()
    assert follow.served_by["condense"] == "rule"
    standalone = "How many litres per minute does the Zephyr pump deliver in the quarter ended March 31, 2023?"
    assert follow.condensed_question == standalone
    first, second = llm.chats[0], llm.chats[1]
    assert first[-1].content.endswith("deliver in the quarter ended June 30, 2023?")
    assert second[-1].content.endswith(standalone) and "And for the quarter" not in second[-1].content
    assert [m.role for m in second] == ["system", "user"]  # not the last answer, with its figure
    own = "How is green tea processed after picking?"
    ctx.chat.turn(own, sid).result()
    assert llm.chats[2][-1].content.endswith(own)
    assert any("42 litres" in (m.content or "") for m in llm.chats[2][:-1])  # the conversation, before it


# The loop a 1.5B model wrote when asked what drove American Express's gross margin (FinanceBench,
# its 2022 10-K): one paragraph over and over until the token limit; figures as it wrote them.
LOOP = (
    "The gross margin change was driven by the increase in the cost of goods sold (COGS). "
    "The COGS increased by $1,100,000, which was primarily due to higher costs associated with new products. "
)


def test_an_answer_going_round_in_a_loop_is_stopped_at_its_first_repeat_and_kept_once(ctx, three_docs, llm):
    ctx.ingestion.ingest_paths([three_docs])
    sid = ctx.sessions.create().id
    llm.script(answers=[LOOP * 4])
    turn = ctx.chat.turn(QUESTION, sid)
    shown = "".join(turn)
    answered = turn.result()
    assert answered.answer.count("The gross margin change") == 1 and answered.answer.count("The COGS") == 1
    assert answered.answer.endswith("new products.") and not answered.stopped  # marked: not in the sources
    assert ctx.sessions.messages(sid)[-1].content == answered.answer
    # the model was stopped at the first repeated sentence, not read to its end
    assert len(shown) < len(LOOP) * 2 and shown.startswith(LOOP)


def test_sentences_said_twice_on_purpose_or_too_short_to_tell_are_kept(ctx, three_docs, llm):
    from rag_core.chat.messages import repeating_from

    ctx.ingestion.ingest_paths([three_docs])
    twice = "It delivers 42 litres per minute [1]. It delivers 42 litres per minute [1]."  # short: kept
    llm.script(answers=[twice])
    assert ctx.chat.turn(QUESTION).result().answer == twice
    assert repeating_from(LOOP + LOOP[:40]) is None  # the repeat is not finished yet
    assert repeating_from(LOOP + "The COGS increased by $1.") is None  # "$1." then "5 million"
    lines = "- Pumps deliver 42 litres per minute at full power\n"
    assert repeating_from(lines * 2) == len(lines)  # a list item written twice, line by line
