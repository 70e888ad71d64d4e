"""An answer being written: the preview and sources first, then the model's words.

``ChatService.stream`` returns an ``AnswerStream`` as soon as the question is searched (a
fraction of a second): its ``sources`` and ``preview`` (the sentence of the sources that
best answers the question) can be shown at once, while the model loads and reads its
prompt. ``prepare()`` does what needs the model before the first word (rewriting a
follow-up, searching again with the rewrite); iterating yields the answer's words. A
consumer that stops iterating (a Stop button, a page left) keeps the partial answer: it is
stored marked as stopped.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from llama_index.core.base.llms.types import ChatResponse

from rag_core.errors import DocentError, ProviderError
from rag_core.payloads import Source
from rag_core.prompts import NO_ANSWER

logger = logging.getLogger(__name__)

STOPPED_MARK = " …(stopped)"


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

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Prepared:
    """What ``prepare`` settles before the first word: the question searched, its sources, and
    the answer's chunks to come."""

    condensed_question: str
    sources: list[Source]
    notices: list[str]
    chunks: Iterator[ChatResponse]


def safe_error(e: BaseException, secrets: tuple[str, ...] = ()) -> str:
    """An error's message with the configured keys, and anything shaped like a key, masked."""
    msg = f"{type(e).__name__}: {e}"
    for secret in secrets:
        if secret and len(secret) >= 4:
            msg = msg.replace(secret, "***")
    msg = re.sub(r"(sk|key|Bearer)[-_ ]?[A-Za-z0-9_\-]{8,}", r"\1-***", msg)
    return msg[:300]


class AnswerStream:
    """An answer being written. Iterate for text deltas; ``turn`` is complete afterwards.

    Before the first delta: ``sources``, ``preview`` and ``condensed_question`` (final once
    ``prepare()`` has run; a follow-up the LLM rewrites is searched again with the rewrite).
    ``started`` is when the question was asked (``time.perf_counter()``): timings count from there.
    """

    def __init__(
        self,
        *,
        condensed_question: str,
        sources: list[Source],
        preview: dict[str, Any] | None,
        notices: list[str],
        timings: dict[str, float],
        served_by: dict[str, str],
        session_id: str | None,
        started: float,
        prepare: Callable[[AnswerStream], Prepared],
        on_done: Callable[[ChatTurn], None],
        secrets: tuple[str, ...] = (),
    ) -> None:
        self.condensed_question = condensed_question
        self.sources = sources
        self.preview = preview
        self.notices = notices
        self.timings = timings
        self.served_by = served_by
        self.session_id = session_id
        self.started = started
        self.secrets = secrets
        self.turn: ChatTurn | None = None
        self.stopped = False
        self._prepare = prepare
        self._prepared: Prepared | None = None
        self._on_done = on_done
        self._stop_asked = False

    def prepare(self) -> None:
        """Rewrite and search again if the question needs the model for that; load the model.
        Idempotent; iterating calls it first."""
        if self._prepared is not None:
            return
        try:
            prepared = self._prepare(self)
        except DocentError:
            raise
        except Exception as e:
            raise ProviderError(
                f"The language model failed: {safe_error(e, self.secrets)}. Your question is kept; try again."
            ) from e
        self._prepared = prepared
        self.condensed_question = prepared.condensed_question
        self.sources = prepared.sources
        self.notices = prepared.notices

    def stop(self) -> None:
        """Stop the answer after the current word; what was written is kept, marked as stopped."""
        self._stop_asked = True

    def __iter__(self) -> Iterator[str]:
        self.prepare()
        assert self._prepared is not None
        parts: list[str] = []
        chunks = self._prepared.chunks
        finished = False
        first = 0.0
        try:
            for chunk in chunks:
                self._read_timings(chunk)
                delta = chunk.delta or ""
                if not delta:
                    continue
                if not parts:
                    first = time.perf_counter()
                    self.timings["first_token_s"] = round(first - self.started, 3)
                parts.append(delta)
                yield delta
                if self._stop_asked:
                    self.stopped = True
                    break
            finished = True
        except DocentError:
            raise
        except GeneratorExit:  # the consumer went away (a rerun, a closed page): keep what was written
            self.stopped = True
            raise
        except Exception as e:
            raise ProviderError(
                f"The language model failed while answering: {safe_error(e, self.secrets)}. "
                "Your question is kept; try again."
            ) from e
        finally:
            close = getattr(chunks, "close", None)
            if callable(close) and (not finished or self.stopped):
                close()  # asks llama.cpp to stop generating
            if finished or (self.stopped and parts):
                self._finish(parts, first)

    def _read_timings(self, chunk: ChatResponse) -> None:
        """llama.cpp reports, on its last chunk, the prompt tokens it read and those it reused."""
        raw = chunk.raw if isinstance(chunk.raw, dict) else None
        figures = raw.get("timings") if raw else None
        if isinstance(figures, dict) and "prompt_n" in figures:
            self.timings["prompt_read_tokens"] = int(figures.get("prompt_n") or 0)
            self.timings["prompt_cached_tokens"] = int(figures.get("cache_n") or 0)

    def _finish(self, parts: list[str], first: float) -> None:
        end = time.perf_counter()
        self.timings["total_s"] = round(end - self.started, 3)
        if len(parts) > 1 and first and end > first:
            self.timings["tokens_per_s"] = round((len(parts) - 1) / (end - first), 2)
        answer = "".join(parts).strip() or NO_ANSWER
        if self.stopped:
            answer += STOPPED_MARK
        self.turn = ChatTurn(
            answer,
            self.condensed_question,
            self.sources,
            self.timings,
            self.notices,
            self.session_id,
            self.served_by,
            self.stopped,
        )
        self._on_done(self.turn)

    def result(self) -> ChatTurn:
        """Drain the stream and return the finished turn."""
        if self.turn is None:
            for _ in self:
                pass
        assert self.turn is not None
        return self.turn
