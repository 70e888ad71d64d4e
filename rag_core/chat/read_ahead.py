"""Reading ahead: while the person reads an answer, the local model reads what the next
question's prompts will begin with, so that a follow-up reads only its own part.

When no rule can complete a follow-up, the rewrite's prompt begins with its fixed instructions
and examples, then the conversation so far; once an answer is stored, that beginning is known.
Read into llama.cpp's prompt cache then (its RAM cache keeps each prompt read, and a later
prompt reuses the longest beginning it shares with one), the rewrite reads only the follow-up
itself (docs/performance.md, "Follow-ups"). The answer's prompt of a follow-up made to stand
alone begins with the system prompt (and summary) alone, which the answers' slot already
holds; only a self-contained follow-up is answered after the conversation, which it reads.

It delays a question by one piece at most: it reads in pieces of about fifty tokens (under a
second on two free cores; pieces four times longer cost a follow-up more waiting and read no
faster, docs/performance.md) and stops before the next piece as soon as a generation waits for the model
(``LlamaCppLLM.read_ahead``); a new answer's read-ahead replaces an older one. Only the local
model has a prompt cache to fill: other providers are left alone, and so is a model not loaded
yet. ``llm_read_ahead`` turns it off.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole

from rag_core.chat.components import ChatComponents
from rag_core.chat.engine import DocentChatEngine
from rag_core.storage import Summary

logger = logging.getLogger(__name__)
MARK = "\u2063\u2063"  # stands where the question will go (invisible separators: in no question)


def next_prompts(
    components: ChatComponents,
    engine: DocentChatEngine,
    llm: Any,
    history: list[ChatMessage],
    summary: Summary | None,
    exchange: tuple[str, str],
) -> list[str]:
    """The beginnings of the next question's prompts after ``history`` and ``exchange``
    (question, answer), as the local model will read them: the answer's, then the rewrite's."""
    question, answer = exchange
    after = [
        *history,
        ChatMessage(role=MessageRole.USER, content=question),
        ChatMessage(role=MessageRole.ASSISTANT, content=answer),
    ]
    kept = components.memory(after, "").get()  # the window the next turn keeps, as it trims it
    _, rewrite = engine.next_prompts(kept, summary, MARK)
    # A follow-up made to stand alone is answered without the conversation (``engine.standing``):
    # the answer's beginning both kinds share is the system prompt (and summary), already there.
    messages, _ = engine.next_prompts([], summary, MARK)
    # up to the last message: where the prompt with it and the one without it part
    prompts = [_common_start(llm.chat_prompt(messages), llm.chat_prompt(messages[:-1]))]
    if rewrite is not None:
        text = llm.completion_prompt(rewrite)
        prompts.append(text[: text.index(MARK)])
    return [p for p in prompts if p.strip()]


def _common_start(a: str, b: str) -> str:
    n = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return a[:n]


def start(
    components: ChatComponents,
    engine: DocentChatEngine,
    history: list[ChatMessage],
    summary: Summary | None,
    exchange: tuple[str, str],
) -> threading.Thread | None:
    """Read the next prompts' beginnings in a background thread; None when there is nothing
    to read ahead (off, another provider, the model not loaded)."""
    models = components.models
    if not components.settings.llm_read_ahead or not models.llm_ready:
        return None
    llm = models.llm()
    read = getattr(llm, "read_ahead", None)
    if not callable(read):
        return None
    try:
        prompts = next_prompts(components, engine, llm, history, summary, exchange)
    except Exception as e:  # a read-ahead only saves time: the stored answer must not fail for it
        logger.debug("reading ahead skipped: %s", type(e).__name__)
        return None

    slot = getattr(llm, "answer_slot", None)  # the answer's beginning in the answers' slot, the rewrite's in the other
    slots = [slot, *[getattr(llm, "other_slot", slot)] * (len(prompts) - 1)] if slot is not None else None

    def work() -> None:
        try:
            done = read(prompts, slots=slots) if slots is not None else read(prompts)
            logger.debug("read ahead: %s", done)
        except Exception as e:  # a read-ahead only saves time: its failure costs none
            logger.debug("reading ahead failed: %s", type(e).__name__)

    thread = threading.Thread(target=work, name="docent-read-ahead", daemon=True)
    thread.start()
    return thread
