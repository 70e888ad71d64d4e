"""The "an answer is being written" gate (rag_core.providers.answering) and the embedding
that waits on it: real threads, synchronised by events, never by sleeping."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from llama_index.core.schema import TextNode

from rag_core.ingestion.transforms import BatchedEmbedder
from rag_core.providers import answering
from rag_core.providers.answering import AnswerGate
from rag_core.providers.embeddings import HashEmbedding


class Cancelled(Exception):
    pass


def test_a_waiter_goes_on_when_the_last_hold_ends():
    gate = AnswerGate()
    waiting, passed = threading.Event(), threading.Event()

    def waiter() -> None:
        gate.wait_clear(check=waiting.set)
        passed.set()

    with gate.hold():
        with gate.hold():  # two answers at once (two sessions)
            thread = threading.Thread(target=waiter)
            thread.start()
            assert waiting.wait(5) and gate.held
        assert not passed.is_set()  # one answer still being written
    assert passed.wait(5) and not gate.held
    thread.join(5)


def test_with_no_answer_nothing_waits():
    gate = AnswerGate()
    calls: list[int] = []
    assert gate.wait_clear(check=lambda: calls.append(1)) < 1.0 and calls == []


def test_a_cancelled_job_stops_waiting(monkeypatch):
    monkeypatch.setattr(answering, "POLL_S", 0.01)
    gate = AnswerGate()
    cancel = threading.Event()
    seen: list[BaseException] = []

    def check() -> None:
        if cancel.is_set():
            raise Cancelled

    def waiter() -> None:
        try:
            gate.wait_clear(check)
        except Cancelled as e:
            seen.append(e)

    with gate.hold():
        thread = threading.Thread(target=waiter)
        thread.start()
        cancel.set()
        thread.join(5)
        assert not thread.is_alive() and len(seen) == 1  # while the answer still holds the gate


def test_a_hold_that_leaked_stops_nobody_for_good():
    now = [0.0]
    gate = AnswerGate(max_hold_s=600.0, clock=lambda: now[0])
    leaked = gate.hold()
    leaked.__enter__()  # never exited, as a generator nobody closes
    assert gate.held
    now[0] = 601.0
    assert not gate.held and gate.wait_clear() < 1.0


class RecordingEmbedding(HashEmbedding):
    """The hash embedding, telling the test when a batch starts (before it embeds)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._batches: list[int] = []
        self._started = threading.Event()

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        self._batches.append(len(texts))
        self._started.set()
        return super()._get_text_embeddings(texts)


def test_embedding_batches_wait_while_an_answer_is_written(monkeypatch):
    gate = AnswerGate()
    monkeypatch.setattr("rag_core.ingestion.transforms.ANSWERING", gate)
    embed = RecordingEmbedding(dim=16, embed_batch_size=4)
    nodes = [TextNode(text=f"passage {i} about pumps") for i in range(10)]
    waiting = threading.Event()
    steps: list[tuple[int, int]] = []

    def step(done: int, total: int) -> None:
        steps.append((done, total))
        if gate.held:
            waiting.set()  # called by the gate's wait: the embedding is waiting

    embedder = BatchedEmbedder(embed_model=embed, step=step, batch=8)
    with gate.hold():
        thread = threading.Thread(target=embedder, args=(nodes,))
        thread.start()
        assert waiting.wait(5)
        assert embed._batches == []  # nothing embedded while the answer is written
    thread.join(5)
    assert not thread.is_alive()
    # The embedding model's own batches (4; the embedder's may be larger): the gate is looked
    # at before each, so an answer waits for one of them at most.
    assert embed._batches == [4, 4, 2]
    assert all(node.embedding is not None for node in nodes)
    assert steps[-1] == (10, 10)


@pytest.mark.parametrize("pause", [True, False])
def test_the_turn_holds_the_gate_while_it_writes_its_answer(make_settings, three_docs, monkeypatch, pause):
    from rag_core import build_context
    from tests.fakes import ScriptedLLM

    gate = AnswerGate()
    monkeypatch.setattr("rag_core.chat.turn.ANSWERING", gate)
    llm = ScriptedLLM()
    ctx = build_context(make_settings(top_k=1, answer_pauses_indexing=pause), llm=llm)
    ctx.ingestion.ingest_file(three_docs / "zephyr.pdf")
    llm.script(answers=["It delivers 42 litres per minute [1]."])
    turn = ctx.chat.turn("How many litres per minute does the Zephyr pump deliver?")
    assert not gate.held  # the search and the preview hold nothing
    words = iter(turn)
    next(words)
    assert gate.held is pause
    list(words)
    assert not gate.held and turn.answered is not None


def test_the_turn_holds_the_gate_while_the_model_rewrites_a_follow_up(make_settings, three_docs, monkeypatch):
    """The rewrite is the answer's work too: indexing and suggested questions wait for it."""
    from rag_core import build_context
    from tests.fakes import ScriptedLLM

    gate = AnswerGate()
    monkeypatch.setattr("rag_core.chat.turn.ANSWERING", gate)
    held_while_rewriting: list[bool] = []

    class RecordingLLM(ScriptedLLM):
        def complete(self, prompt, formatted=False, **kw):
            held_while_rewriting.append(gate.held)
            return super().complete(prompt, formatted, **kw)

    llm = RecordingLLM()
    ctx = build_context(make_settings(top_k=1), llm=llm)
    ctx.ingestion.ingest_file(three_docs / "zephyr.pdf")
    sid = ctx.sessions.create("s").id
    llm.script(answers=["It delivers 42 litres per minute [1]."])
    list(ctx.chat.turn("How many litres per minute does the Zephyr pump deliver?", sid))
    llm.script(answers=["It runs on a 12 volt battery [1]."], condense=["What battery does the Zephyr pump run on?"])
    turn = ctx.chat.turn("and what does it run on", sid)
    turn.prepare()  # as the page does, before the words
    assert held_while_rewriting == [True] and not gate.held
    list(turn)
    assert not gate.held and turn.answered is not None
