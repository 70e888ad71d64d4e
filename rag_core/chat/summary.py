"""Long conversations keep working: older turns are summarised, not dropped.

When a session's history passes what the model may read of it (``memory_token_limit``), the
oldest turns are folded into a summary that the model sees in their place (stored per
session, shown in the app), and the recent turns stay word for word. Two ways to write it:

- ``digest`` (the default with the local model): each turn as its question and the first
  sentence of its answer, where the figures and names usually are. Instant: an LLM summary
  on two cores costs half a minute, and the model serves one call at a time, so it would
  hold up the next answer.
- ``llm``: the configured model writes the summary (the default with a cloud model), from
  the previous summary and the turns being folded in; the digest if that call fails.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.llms import LLM

from rag_core.prompts import SUMMARY_PROMPT
from rag_core.storage import Message, SessionStore, Summary

logger = logging.getLogger(__name__)

PREFIX = "Summary of the earlier conversation (the turns before are not shown):\n"
_FIRST_SENTENCE = re.compile(r"^(.+?[.!?。！？])(?:\s|$)", re.S)
_CITATIONS = re.compile(r"\s*\[\d{1,2}\]")
# "According to the information provided in the documents, X was Y" -> "X was Y": the lead-in
# says nothing, and a shortened line would keep only it (measured: 30 real turns left a summary
# of "According to the information provided…" lines).
_LEAD_IN = re.compile(
    r"^(?:according to|as (?:stated|shown|reported|mentioned) in|based on)\b[^,]{0,90},\s*", re.IGNORECASE
)


def _essential(sentence: str) -> str:
    """An answer's first sentence without its attribution lead-in, capitalised again."""
    stripped = _LEAD_IN.sub("", sentence).strip()
    return stripped[:1].upper() + stripped[1:] if stripped else sentence


def digest(previous: str, messages: list[Message], words: int = 40) -> str:
    """The previous summary, then each turn: its question, and its answer's first sentence."""
    lines = [previous] if previous else []
    question = ""
    for m in messages:
        text = " ".join((m.content or "").split())
        if m.role == "user":
            question = text
        else:
            m_first = _FIRST_SENTENCE.match(text)
            first = _essential(_CITATIONS.sub("", m_first.group(1) if m_first else text))
            parts = first.split()
            if len(parts) > words:  # its subject and its end, where the figure usually is
                first = f"{' '.join(parts[: words // 2])} … {' '.join(parts[-(words // 2) :])}"
            lines.append(f"- Q: {question} A: {first}")
            question = ""
    if question:
        lines.append(f"- Q: {question}")
    return "\n".join(lines)


def compact(text: str, budget: int, count_tokens: Callable[[str], int]) -> str:
    """``text`` (a digest) within ``budget`` tokens: the longest answers cut to their start (the
    subject) and their end (where the figure usually is), down to a dozen words; then the questions left out (the answer's first sentence names its subject);
    then, only if still too long, the oldest lines dropped."""
    lines = text.splitlines()
    # Each line's tokens and answer words counted once, then kept up to date: counting them all
    # again at every step took minutes on a 10,000-message chat folded at once (an import).
    counts = [count_tokens(line) for line in lines]
    lengths = [len(line.split(" A: ", 1)[-1].split()) for line in lines]
    total = sum(counts)

    def replace(i: int, line: str) -> None:
        nonlocal total
        total += count_tokens(line) - counts[i]
        lines[i], counts[i] = line, count_tokens(line)
        lengths[i] = len(line.split(" A: ", 1)[-1].split())

    while total > budget:
        longest = max(range(len(lines)), key=lengths.__getitem__)
        head, sep, answer = lines[longest].partition(" A: ")
        words = answer.replace("…", " ").split()
        if not sep or len(words) <= 12:
            break
        keep = max(6, len(words) // 4)  # its subject (the start) and its figure (the end)
        replace(longest, f"{head}{sep}{' '.join(words[:keep])} … {' '.join(words[-keep:])}")
    for i, line in enumerate(lines):
        if total <= budget:
            break
        if line.startswith("- Q: ") and " A: " in line:
            replace(i, "- " + line.split(" A: ", 1)[1])
    first = 0
    while first < len(lines) and total > budget:
        total -= counts[first]
        first += 1
    return "\n".join(lines[first:])


def summarise(previous: str, messages: list[Message], llm: LLM | None) -> str:
    """A summary of ``previous`` and ``messages``: by ``llm`` when given, else (or when it
    fails) the digest."""
    if llm is not None:
        turns = "\n".join(f"{m.role}: {m.content}" for m in messages)
        try:
            text = str(llm.complete(SUMMARY_PROMPT.format(previous=previous or "(none)", turns=turns))).strip()
            if text:
                return text
        except Exception as e:  # a summary is a convenience: never fail the answer for it
            logger.warning("summary by the LLM failed, using the digest: %s", e)
    return digest(previous, messages)


def fold(
    sessions: SessionStore,
    session_id: str,
    messages: list[Message],
    budget: int,
    count_tokens: Callable[[str], int],
    llm: Callable[[], LLM | None],
) -> tuple[Summary | None, list[Message]]:
    """The summary the model sees and the messages after it, folding older turns into a new
    summary when the messages pass ``budget`` tokens: the most recent half of it stays word for
    word, the summary takes at most the other half."""
    past = sessions.summaries(session_id)
    latest = past[-1] if past else None
    after = [m for m in messages if latest is None or (m.id or 0) > latest.upto_message_id]
    if sum(count_tokens(m.content or "") for m in after) <= budget:
        return latest, after
    keep, used = len(after), 0
    while keep > 0 and used + count_tokens(after[keep - 1].content or "") <= budget // 2:
        used += count_tokens(after[keep - 1].content or "")
        keep -= 1
    while keep < len(after) and after[keep].role != "user":  # the kept part starts with a question
        keep += 1
    folded, recent = after[:keep], after[keep:]
    if not folded or folded[-1].id is None:
        return latest, after
    text = compact(summarise(latest.text if latest else "", folded, llm()), budget // 2, count_tokens)
    return sessions.add_summary(session_id, folded[-1].id, text), recent


def as_message(summary: Summary) -> ChatMessage:
    """The summary as the model reads it: a system message before the recent turns."""
    return ChatMessage(role=MessageRole.SYSTEM, content=PREFIX + summary.text)
