"""Reading ahead (rag_core.chat.read_ahead): after an answer, what the model is given to read is
the very beginning of the follow-up's prompts, rewrite and answer alike. A scripted model that
renders prompts as the local one does (ChatML) and records what it was asked to read ahead."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest
from llama_index.core.base.llms.types import ChatMessage

from rag_core import build_context
from rag_core.providers.chatml import completion_to_chatml, messages_to_chatml
from tests.fakes import ScriptedLLM

QUESTION = "How many litres per minute does the Zephyr pump deliver?"
ANSWER = "The Zephyr pump delivers 42 litres per minute [1]."
WRITTEN = "The Zephyr pump delivers 42 litres per minute."  # as the next turn reads it: without its source number


class ReadingLLM(ScriptedLLM):
    """Renders prompts as ``LlamaCppLLM`` does, has its two slots, and records its read-aheads
    and the slot each answer was asked in."""

    answer_slot: ClassVar[int] = 0
    other_slot: ClassVar[int] = 1

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.__dict__["read"] = []
        self.__dict__["slots"] = []
        self.__dict__["answered_in"] = []
        self.__dict__["done"] = threading.Event()

    def stream_chat(self, messages: Sequence[ChatMessage], **kw: Any) -> Any:
        self.answered_in.append(kw.get("slot"))
        return super().stream_chat(messages, **kw)

    def load(self) -> None:
        """The local model's load: nothing to read here."""

    def chat_prompt(self, messages: Sequence[ChatMessage]) -> str:
        return messages_to_chatml(messages)

    def completion_prompt(self, prompt: str) -> str:
        return completion_to_chatml(prompt)

    def read_ahead(self, prompts: Sequence[str], slots: Sequence[int] | None = None) -> dict[str, Any]:
        self.read.append(list(prompts))
        self.slots.append(list(slots or []))
        self.done.set()
        return {"tokens": 0, "stopped": False}


@pytest.fixture
def reading(make_settings, three_docs):
    def make(**overrides: Any) -> tuple[Any, ReadingLLM]:
        llm = ReadingLLM()
        ctx = build_context(make_settings(llm_provider="local", top_k=1, **overrides), llm=llm)
        ctx.ingestion.ingest_file(three_docs / "zephyr.pdf")
        return ctx, llm

    return make


def test_after_an_answer_the_model_reads_the_beginnings_of_both_follow_up_prompts(reading):
    ctx, llm = reading()
    sid = ctx.sessions.create().id
    llm.script(answers=[ANSWER])
    ctx.chat.ask(QUESTION, sid)
    assert llm.done.wait(10)
    [[answer_start, rewrite_start]] = llm.read
    assert WRITTEN in rewrite_start  # the rewrite's beginning: the conversation, with the last exchange
    assert WRITTEN not in answer_start and answer_start.startswith(
        "<|im_start|>system"
    )  # the answer's: the system prompt
    assert llm.slots == [[0, 1]]  # the answer's beginning in the answers' slot, the rewrite's in the other

    llm.done.clear()
    llm.script(condense=["How much does the Zephyr pump weigh?"], answers=["It weighs 3 kg [1]."])
    follow = ctx.chat.ask("How much does it weigh?", sid)  # a pronoun: the model rewrites it
    assert follow.served_by["condense"] == "llm"
    # What was read ahead is where the follow-up's prompts begin: only the rest is new to the model.
    # A rewritten follow-up is answered as it stands, without the conversation: its beginning is
    # the system prompt the answers' slot holds; a self-contained one after the conversation.
    assert completion_to_chatml(llm.prompts[-1]).startswith(rewrite_start)
    rewritten = messages_to_chatml(llm.chats[-1])
    assert rewritten.startswith(answer_start) and WRITTEN not in rewritten
    assert len(rewritten) > len(answer_start)  # the sources and question follow
    assert llm.done.wait(10)
    llm.script(answers=["It is 40 cm tall [1]."])
    ctx.chat.ask("How tall is the Zephyr pump housing?", sid)  # self-contained: as typed, after the conversation
    own = messages_to_chatml(llm.chats[-1])
    assert own.startswith(answer_start) and "It weighs 3 kg" in own
    assert llm.answered_in == [0, 0, 0]  # every answer written in the slot that holds its beginning


def test_nothing_is_read_ahead_when_off_or_for_a_question_outside_a_session(reading):
    ctx, llm = reading(llm_read_ahead=False)
    sid = ctx.sessions.create().id
    llm.script(answers=[ANSWER])
    ctx.chat.ask(QUESTION, sid)
    assert not llm.done.wait(0.5) and llm.read == []

    ctx, llm = reading()
    llm.script(answers=[ANSWER])
    ctx.chat.ask(QUESTION)  # a one-off question: no follow-up will come in its session
    assert not llm.done.wait(0.5) and llm.read == []


def test_a_model_without_a_prompt_cache_is_left_alone(make_settings, three_docs, monkeypatch):
    from rag_core.chat import read_ahead

    started: list[str] = []

    def thread(*args: Any, **kw: Any) -> threading.Thread:
        started.append(kw.get("name", ""))
        return threading.Thread(*args, **kw)

    monkeypatch.setattr(read_ahead, "threading", SimpleNamespace(Thread=thread))
    llm = ScriptedLLM(answers=[ANSWER, ANSWER])
    ctx = build_context(make_settings(llm_provider="local", top_k=1), llm=llm)
    ctx.ingestion.ingest_file(three_docs / "zephyr.pdf")
    sid = ctx.sessions.create().id
    ctx.chat.ask(QUESTION, sid)
    assert started == []  # no prompt cache to fill (another provider): nothing started

    reader = ReadingLLM(answers=[ANSWER])
    ctx = build_context(make_settings(llm_provider="local", top_k=1, data_dir=ctx.settings.data_dir), llm=reader)
    ctx.chat.ask(QUESTION, sid)
    assert started == ["docent-read-ahead"] and reader.done.wait(10)  # the same turn with a cache to fill
