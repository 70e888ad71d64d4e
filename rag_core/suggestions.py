"""Suggested questions: what to ask a new session, and what to ask after an answer.

Two sources, so that a suggestion is always there at once and gets better later:

* Rules (instant): a document's outline (``rag_core.outline``) — its section headings
  ("What does the section on Capacity say?") and the definitions among its first sentences
  ("Bananas are ..." → "What are bananas?").
* The LLM (background): one call per document over its first chunks (``SUGGEST_PROMPT``),
  made by one worker thread after ``schedule(name)``, never on a page's path. With the
  ``extractive`` provider there is no model, so only the rules answer.

Both are cached per document content (its sha256) in ``<data_dir>/suggestions.json``,
written atomically; it is a cache (lost or unreadable, it is computed again).

Follow-ups (``follow_ups``) come from rules only, for every provider: the figures and
tables the cited passages mention, and the headings on and after the cited pages or
sections. An answer is not made to wait for another LLM call: the local model serves one
generation at a time, and a cloud call would add its latency and cost to every answer.
"""

from __future__ import annotations

import json
import logging
import queue
import re
import threading
from typing import Any

from rag_core.files import atomic_write
from rag_core.index import VectorIndex
from rag_core.outline import outline, start_text, unique
from rag_core.payloads import Source
from rag_core.prompts import SUGGEST_MARKER, SUGGEST_PROMPT
from rag_core.providers.answering import ANSWERING
from rag_core.providers.models import ModelLoader
from rag_core.settings import DocentSettings
from rag_core.storage import DocumentRecord, DocumentRegistry

logger = logging.getLogger(__name__)

PROMPT_CHARS = 1200  # of the document's start given to the LLM
MAX_TOKENS = 100  # three short questions
MAX_QUEUE = 8  # documents waiting for LLM questions; the most recently scheduled win
MAX_GIVE_WAYS = 3  # a document whose questions gave way to answers this often waits for another process

_GENERIC = {
    "abstract", "acknowledgements", "acknowledgments", "appendix", "background", "bibliography",
    "conclusion", "conclusions", "contents", "foreword", "glossary", "index", "introduction", "notes",
    "overview", "preface", "references", "summary", "table of contents",
}  # fmt: skip
_FIGURE = re.compile(r"\b(Figure|Fig\.|Table|Exhibit|Chart)\s+(\d+(?:\.\d+)*[a-z]?)\b")
_ABOUT_ITSELF = re.compile(
    r"\b(?:main (?:topic|idea|point|purpose|subject|focus)|(?:this|the) (?:document|text|passage|paper|article)\?)",
    re.I,
)
_BULLET = re.compile(r"^\s*(?:[-*•]|\(?\d+[.)]|Q\d*[:.])\s*")


class SuggestionService:
    """Questions drawn from the documents. Shared by every session; thread-safe."""

    def __init__(
        self, settings: DocentSettings, index: VectorIndex, registry: DocumentRegistry, models: ModelLoader
    ) -> None:
        self.settings = settings
        self.index = index
        self.registry = registry
        self.models = models
        self.path = settings.paths.suggestions
        self.llm_calls = 0  # made by the worker (tests and the bench read it)
        self._lock = threading.Lock()
        self._cache: dict[str, dict[str, Any]] | None = None
        self._queue: queue.Queue[str] = queue.Queue()
        self._pending: list[str] = []  # names waiting, most recent last
        self._tried: set[str] = set()  # sha256s given to the LLM in this process
        self._gave_way: dict[str, int] = {}  # sha256 -> calls stopped for an answer
        self._worker: threading.Thread | None = None

    # ------------------------------------------------------------------ public API
    def for_documents(self, names: list[str] | None = None, n: int = 3) -> list[str]:
        """Up to ``n`` questions for a new session over ``names`` (None: every document, the
        most recent first), one document after the other. Never waits for the LLM: documents
        it has not seen yet are scheduled, and their rule questions come at once."""
        records = self._records(names)
        per_doc: list[list[str]] = []
        for rec in records[: max(n, 1) * 3]:
            entry = self._entry(rec)
            if "llm" not in entry and rec.sha256 not in self._tried and self._may_load():
                self.schedule(rec.name)
            questions = unique([*entry.get("llm", []), *(q for q, _ in _rule_items(entry))])
            if questions:
                per_doc.append(questions)
            if len(per_doc) >= n:
                break
        out: list[str] = []
        for i in range(max((len(q) for q in per_doc), default=0)):
            out += [q[i] for q in per_doc if i < len(q)]
        return unique(out)[:n]

    def schedule(self, name: str) -> None:
        """Compute the LLM's questions for ``name`` in the background (once per content)."""
        with self._lock:
            if name in self._pending:
                self._pending.remove(name)
            self._pending.append(name)
            del self._pending[:-MAX_QUEUE]
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(target=self._work, name="docent-suggestions", daemon=True)
                self._worker.start()
        self._queue.put(name)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the scheduled documents are done (True) or ``timeout`` passes (False)."""
        worker = self._worker
        if worker is None:
            return True
        done = threading.Event()

        def join() -> None:
            self._queue.join()
            done.set()

        threading.Thread(target=join, daemon=True).start()
        return done.wait(timeout)

    def follow_ups(self, question: str, answer: str, sources: list[Source], n: int = 2) -> list[str]:
        """Up to ``n`` questions to ask next, from the sources of an answer (rules only)."""
        asked = f"{question}\n{answer}".lower()
        out: list[str] = []
        docs: dict[str, dict[str, Any]] = {}
        cited = _cited(answer, sources)
        shown = "\n".join(str(src.get("text") or "") for src in cited).lower()  # what the answer drew on
        for src in cited:
            name = src.get("file")
            rec = self.registry.get(name) if name else None
            if rec is None or rec.status != "indexed":
                continue
            entry = docs.get(rec.name) or self._entry(rec)
            docs[rec.name] = entry
            title = _title(entry)
            text = src.get("text") or ""
            for kind, label in _FIGURE.findall(text):
                thing = f"{'Figure' if kind == 'Fig.' else kind} {label}"
                if thing.lower() not in asked:
                    out.append(f"What does {thing} in {title} show?")
            for heading in _near(entry, src):
                if not _covered(heading, asked) and heading.lower() not in shown:
                    out.append(_about(heading))
        for entry in docs.values():
            out += [q for q, topic in _rule_items(entry) if not _covered(topic, asked) and topic.lower() not in shown]
        return [q for q in unique(out) if q.lower() != question.strip().lower()][:n]

    # ------------------------------------------------------------------ cache
    def _records(self, names: list[str] | None) -> list[DocumentRecord]:
        records = self.registry.list()
        if names:
            wanted = set(names)
            records = [r for r in records if r.name in wanted]
        return sorted(records, key=lambda r: (-r.updated, r.name))

    def _load(self) -> dict[str, dict[str, Any]]:
        if self._cache is None:
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
                self._cache = data if isinstance(data, dict) else {}
            except FileNotFoundError:
                self._cache = {}
            except (OSError, ValueError) as e:  # a cache: computed again
                logger.warning("ignoring unreadable %s: %s", self.path, e)
                self._cache = {}
        return self._cache

    def _entry(self, rec: DocumentRecord) -> dict[str, Any]:
        with self._lock:
            entry = self._load().get(rec.sha256)
        if entry is not None and "headings" in entry:
            return entry
        entry = {**(entry or {}), **outline(rec.name, self.index)}
        self._store(rec.sha256, entry)
        return entry

    def _store(self, sha: str, entry: dict[str, Any]) -> None:
        with self._lock:
            cache = self._load()
            cache[sha] = entry
            live = {r.sha256 for r in self.registry.list(status=None)}
            for gone in [k for k in cache if k not in live]:
                del cache[gone]
            atomic_write(self.path, json.dumps(cache, ensure_ascii=False))

    # ------------------------------------------------------------------ the LLM, in the background
    def _may_load(self) -> bool:
        """Whether a page may start LLM work unasked: not when that means loading the
        local model (``schedule`` after an upload does; a page view does not)."""
        return self.models.llm_ready or self.settings.llm_provider != "local"

    def _work(self) -> None:
        while True:
            name = self._queue.get()
            try:
                with self._lock:
                    wanted = name in self._pending
                    if wanted:
                        self._pending.remove(name)
                if wanted:
                    ANSWERING.wait_quiet(self.settings.suggest_quiet_s)  # the person reads: nobody waits
                    if not self._suggest(name):
                        self.schedule(name)  # it gave way to an answer: again when it is quiet
            except Exception as e:  # a failed suggestion must not stop the worker
                logger.warning("no LLM questions for %s: %s", name, e)
            finally:
                self._queue.task_done()

    def _suggest(self, name: str) -> bool:
        """The LLM's questions for ``name``, stored; False when the call stopped because an
        answer began (an answer never waits for more than the prompt being read)."""
        rec = self.registry.get(name)
        if rec is None or rec.status != "indexed":
            return True
        entry = self._entry(rec)
        if "llm" in entry or rec.sha256 in self._tried:
            return True
        self._tried.add(rec.sha256)
        llm = self.models.llm()
        if llm.metadata.model_name == "extractive":  # quotes passages; it writes no questions
            return True
        text = start_text(name, self.index, PROMPT_CHARS)
        if not text.strip():
            return True
        prompt = SUGGEST_PROMPT.format(title=_title(entry), text=text, n=3)
        self.llm_calls += 1
        reply = ""
        stream = llm.stream_complete(prompt, max_tokens=MAX_TOKENS)
        try:
            for response in stream:
                if ANSWERING.held:  # stopped at this word: the local model serves one call at a time
                    gave_way = self._gave_way[rec.sha256] = self._gave_way.get(rec.sha256, 0) + 1
                    if gave_way < MAX_GIVE_WAYS:
                        self._tried.discard(rec.sha256)
                    return False
                reply = response.text
        finally:
            close = getattr(stream, "close", None)
            if callable(close):
                close()
        self._store(rec.sha256, {**entry, "llm": parse_questions(reply)})
        return True


def parse_questions(reply: str, n: int = 3) -> list[str]:
    """The questions in an LLM reply: one per line, bullets and numbers removed."""
    reply = reply.split(SUGGEST_MARKER)[-1]
    out = []
    for line in reply.splitlines():
        for part in re.findall(r"[^?？]+[?？]", line):  # a small model may put several on one line
            q = " ".join(_BULLET.sub("", part.strip()).split()).strip("\"'")
            if (8 if q.isascii() else 4) <= len(q) <= 200 and not _ABOUT_ITSELF.search(q):
                out.append(q)
    return unique(out)[:n]


def _rule_items(entry: dict[str, Any]) -> list[tuple[str, str]]:
    """(question, its topic) from a document's outline: headings, definitions, the whole."""
    title = _title(entry)
    out = [(_about(h), h) for h, _ in entry.get("headings", []) if h.lower() not in _GENERIC]
    out += [(q, q.split(" ", 2)[-1].rstrip("?")) for q in entry.get("facts", [])]
    out.append((f"What is {title} about?", title))
    return out


def _about(heading: str) -> str:
    # The section, not the document, is named: a document's title in the question would
    # pull retrieval to its title page instead of the section.
    return f"What does the section on {heading} say?"


def _title(entry: dict[str, Any]) -> str:
    title = entry.get("title") or ""
    return title if len(title.split()) >= 2 else entry.get("name", "the document")


def _cited(answer: str, sources: list[Source]) -> list[Source]:
    """The sources the answer cites ([1], [2]...), else the two best."""
    marks = [int(m) for m in re.findall(r"\[(\d{1,2})\]", answer)]
    cited = [sources[m - 1] for m in dict.fromkeys(marks) if 1 <= m <= len(sources)]
    return cited or sources[:2]


def _near(entry: dict[str, Any], src: Source) -> list[str]:
    """Headings on the cited page, then the ones after it (nearest first); for a section,
    the sections after the cited one. The cited section's own heading is what was asked."""
    headings = entry.get("headings", [])
    cited = str(src.get("heading") or "").split(">")[-1].strip()
    if cited:
        at = next((i for i, (h, _) in enumerate(headings) if h == cited), None)
        return [h for h, _ in headings[at + 1 : at + 3]] if at is not None else []
    page = src.get("page")
    if page is None:
        return []
    return [h for h, p in headings if p == page] + [h for h, p in headings if p > page][:2]


def _covered(topic: str, asked: str) -> bool:
    """Whether the question or the answer already speaks of ``topic`` (its longer words)."""
    words = [w for w in re.findall(r"\w+", topic.lower()) if len(w) >= 4 or not w.isascii()]
    return bool(words) and all(w in asked for w in words)
