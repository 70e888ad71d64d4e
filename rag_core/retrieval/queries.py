"""More searches for one question: phrasings of it, and what its conversation adds.

- ``query_variants``: other phrasings, fused with the question's own search
  (``multi_query``) or tried once when the first search looks weak (``retry_weak``):
  by rule (the last asking sentence, the keywords) or written by the LLM.
- ``ConversationQueries``: a follow-up's conversation (``history_search``). A rewrite by a
  small model misses often (it resolves "it" to the conversation's topic rather than to
  the entity of the last answer, or leaves "they" in place), so two more searches are
  fused with the rewrite's: the start of the last answer followed by the rewrite (the
  entity just talked about), and the previous question followed by the question as typed
  (the topic). docs/evaluation.md has what each shape measured.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

from rag_core.prompts import MULTI_QUERY_PROMPT, RETRY_PROMPT
from rag_core.text import focus_sentence, head_words, keyword_query

logger = logging.getLogger(__name__)

ANSWER_WORDS = 30  # how much of the last answer a follow-up is searched with
EARLIER_QUESTIONS = 1  # how many earlier questions (docs/evaluation.md: more measured worse)


def parse_queries(text: str, question: str, n: int) -> list[str]:
    """Lines of an LLM's answer as queries: numbering, bullets and quotes removed; no repeats."""
    out: list[str] = []
    for line in (text or "").splitlines():
        line = re.sub(r"^\s*(?:\d+[.)]|[-*•])\s*", "", line).strip().strip("\"“”'`").strip()
        line = re.sub(r"^(query|queries)\s*\d*\s*[:：]\s*", "", line, flags=re.I).strip()
        if line and line.lower() != question.lower() and line not in out and len(line) < 300:
            out.append(line)
    return out[:n]


def query_variants(query: str, how: str, llm_factory: Callable[[], Any] | None, *, retry: bool = False) -> list[str]:
    """Other phrasings of ``query``: ``how`` is 'rules' or 'llm' ('off': none). ``retry``
    asks the LLM for one query naming the subject instead of two phrasings."""
    if how == "llm" and llm_factory is not None:
        try:
            prompt = RETRY_PROMPT.format(question=query) if retry else MULTI_QUERY_PROMPT.format(n=2, question=query)
            text = str(llm_factory().complete(prompt))
            return parse_queries(text, query, 1 if retry else 2)
        except Exception as e:  # a variant is a bonus: never fail the search for it
            logger.warning("query variants skipped: %s", e)
            return []
    if how in ("rules", "llm"):
        out: list[str] = []
        for variant in (focus_sentence(query), keyword_query(query)):
            if variant and variant.strip().lower() != query.strip().lower() and variant not in out:
                out.append(variant)
        return out
    return []


class ConversationQueries:
    """What a follow-up's conversation adds to its search (``history_search``), and what it
    says of the follow-up: the question as typed and the questions before it (``previous``,
    oldest first), from which a follow-up that names nothing keeps its subject
    (``entity_scope``). ``searches=False``: no extra searches, the rest kept."""

    def __init__(self, question: str, history: list[tuple[str, str]], *, searches: bool = True) -> None:
        answers = [text for role, text in history if role == "assistant" and text]
        questions = [text for role, text in history if role == "user" and text]
        self.typed = question
        self.previous = questions
        self.searches = searches
        self.answer_head = head_words(answers[-1], ANSWER_WORDS) if answers else ""
        earlier = questions[-EARLIER_QUESTIONS:]
        self.earlier = " ".join([*earlier, question]) if earlier else ""

    def __bool__(self) -> bool:
        return bool(self.answer_head or self.earlier)

    def queries(self, query: str) -> list[str]:
        """The extra searches for ``query`` (the rewrite actually searched)."""
        if not self.searches:
            return []
        out = []
        if self.answer_head:
            out.append(f"{self.answer_head} {query}")
        if self.earlier and self.earlier != query:
            out.append(self.earlier)
        return out
