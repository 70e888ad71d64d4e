"""What the chat passes around: a history as (role, text) pairs, passages as sources, the
answered turn (``ChatTurn``), token counts, and the keys to keep out of what it shows
(``secrets_of``, ``safe_error``)."""

from __future__ import annotations

import hashlib
import itertools
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, ChatResponse, MessageRole
from llama_index.core.schema import NodeWithScore
from llama_index.core.utils import get_tokenizer

from rag_core.payloads import Source
from rag_core.settings import DocentSettings
from rag_core.storage import Message

__all__ = [
    "STOPPED_MARK",
    "ChatTurn",
    "History",
    "as_chat_messages",
    "count_tokens",
    "repeating_from",
    "safe_error",
    "secrets_of",
    "to_source",
    "without_repeat",
]

History = list[tuple[str, str]]  # (role, text) pairs, oldest first
# Where one sentence ends and the next begins: after ".", "!" or "?" and a space (not in "1.5"), or a line break.
_BREAK = re.compile(r"(?<=[.!?])\s+|\n+")
_LOOPING = 40  # a sentence this long written twice word for word: the model is going round in a loop
STOPPED_MARK = " …(stopped)"  # ends an answer stopped before its end, in the text shown and stored


@dataclass
class ChatTurn:
    """One answered question. ``as_json`` is the CLI's ``--json`` contract."""

    answer: str
    condensed_question: str
    sources: list[Source]
    timings: dict[str, float]
    notices: list[str] = field(default_factory=list)
    session_id: str | None = None
    served_by: dict[str, str] = field(default_factory=dict)
    stopped: bool = False
    figures_checked: int = 0  # figures of the answer checked against its sources (``chat.checking``)
    figures_unsupported: int = 0  # of those, the ones no source holds as stated (marked in the answer)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def count_tokens(text: str) -> int:
    """Tokens of ``text`` as LlamaIndex's memory buffer counts them (near the local model's count)."""
    return len(get_tokenizer()(text))


def secrets_of(settings: DocentSettings) -> tuple[str, ...]:
    """The keys in force, to be kept out of error messages and answers."""
    return tuple(k.get_secret_value() for k in (settings.openai_api_key, settings.cohere_api_key) if k)


def repeating_from(text: str) -> int | None:
    """Where ``text`` begins to repeat itself: the start of its last sentence when that sentence
    (``_LOOPING`` characters or more) was already written word for word; else None. A 1.5B model
    decoding greedily can go round one paragraph until its token limit (asked what drove American
    Express's gross margin, it wrote the same four sentences four times in 46-87 s)."""
    body = text.rstrip()
    if not body.endswith((".", "!", "?")) and "\n" not in text[len(body) :]:
        return None  # the last sentence is still being written
    starts = [0, *(m.end() for m in _BREAK.finditer(body))]
    last = " ".join(body[starts[-1] :].split())
    if len(last) < _LOOPING:
        return None
    earlier = {" ".join(body[a:b].split()) for a, b in itertools.pairwise(starts)}
    return starts[-1] if last in earlier else None


def without_repeat(text: str) -> str:
    """``text`` up to where it begins to repeat itself (``repeating_from``): a loop kept once."""
    return text[: repeating_from(text)]


def safe_error(e: BaseException, secrets: tuple[str, ...] = ()) -> str:
    """An error's message with the configured keys, and anything shaped like a key, masked."""
    msg = f"{type(e).__name__}: {e}"
    for secret in secrets:
        if secret and len(secret) >= 4:
            msg = msg.replace(secret, "***")
    msg = re.sub(r"(sk|key|Bearer)[-_ ]?[A-Za-z0-9_\-]{8,}", r"\1-***", msg)
    return msg[:300]


def to_source(hit: NodeWithScore, extras: dict[str, float] | None = None) -> Source:
    """A passage as the pages, the CLI and SQLite show it."""
    meta = hit.node.metadata
    text = hit.node.get_content()
    src: Source = {
        "file": meta.get("file_name") or meta.get("doc_key"),
        "page": meta.get("page"),
        "score": round(float(hit.score or 0.0), 4),
        "text": text,
        "chunk_id": hit.node.node_id,
        "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
    }
    if meta.get("page_label") and str(meta.get("page_label")) != str(meta.get("page")):
        src["page_label"] = meta["page_label"]
    if meta.get("heading"):
        src["heading"] = meta["heading"]
    if extras:
        src.update(extras)  # type: ignore[typeddict-item]
    return src


def as_chat_messages(history: History) -> list[ChatMessage]:
    """(role, text) pairs as LlamaIndex chat messages."""
    return [ChatMessage(role=MessageRole(role), content=text) for role, text in history]


def llama_timings(chunk: ChatResponse) -> dict[str, Any]:
    """What llama.cpp reports on an answer's last chunk: the prompt tokens it read and those it
    reused, the decode speed, and the threads the local model used (``providers.threads``)."""
    raw = chunk.raw if isinstance(chunk.raw, dict) else None
    figures = raw.get("timings") if raw else None
    out: dict[str, Any] = {}
    if isinstance(figures, dict) and "prompt_n" in figures:
        out["prompt_read_tokens"] = int(figures.get("prompt_n") or 0)
        out["prompt_cached_tokens"] = int(figures.get("cache_n") or 0)
        if figures.get("predicted_per_second"):
            out["decode_tokens_per_s"] = round(float(figures["predicted_per_second"]), 2)
    threads = raw.get("threads") if raw else None
    if isinstance(threads, dict):
        out.update({k: v for k, v in threads.items() if isinstance(v, (int, float))})
    return out


def stored_answer(
    answered: ChatTurn, preview: dict[str, Any] | None, rewrite_edited: bool, written: str | None
) -> Message:
    """The session's row for an answer: shown as answered (with the check's notes); ``written``,
    the model's own text, kept beside it when the notes changed it: the next turns read that
    (``ChatService._recall``), as the notes quote the documents."""
    meta: dict[str, Any] = {"timings": answered.timings, "notices": answered.notices, "served_by": answered.served_by}
    meta.update({k: True for k, on in {"stopped": answered.stopped, "rewrite_edited": rewrite_edited}.items() if on})
    meta.update({k: answered.timings[k] for k in ("figures_checked", "figures_unsupported") if k in answered.timings})
    if preview:
        meta["preview"] = preview
    if written and written != answered.answer and not answered.stopped:
        meta["written"] = written
    asked = answered.condensed_question
    return Message("assistant", answered.answer, condensed_question=asked, sources=answered.sources, meta=meta)
