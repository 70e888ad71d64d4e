"""Suggested questions: what to ask a new session, and what to ask after an answer.

Two sources, so that a suggestion is always there at once and gets better later:

* Rules (instant): a document's outline read from its chunks in Chroma — its title, its
  section headings (the heading metadata of Markdown/DOCX/HTML sections; for PDFs and
  text, short numbered, Title Case or capitalised lines) and definitions among the first
  sentences ("Bananas are ..." → "What are bananas?").
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

import itertools
import json
import logging
import queue
import re
import threading
from typing import Any

from rag_core.files import atomic_write
from rag_core.index import VectorIndex
from rag_core.payloads import Source
from rag_core.prompts import SUGGEST_MARKER, SUGGEST_PROMPT
from rag_core.providers.models import ModelLoader
from rag_core.settings import DocentSettings
from rag_core.store import DocumentRecord, DocumentRegistry

logger = logging.getLogger(__name__)

CACHE_FILE = "suggestions.json"
PROMPT_CHARS = 1500  # of the document's start given to the LLM
MAX_QUEUE = 8  # documents waiting for LLM questions; the most recently scheduled win

_GENERIC = {
    "abstract", "acknowledgements", "background", "contents page", "acknowledgments", "appendix", "bibliography", "conclusion",
    "conclusions", "contents", "foreword", "glossary", "index", "introduction", "notes", "overview",
    "preface", "references", "summary", "table of contents",
}  # fmt: skip
_NOT_SUBJECTS = {
    "it", "this", "that", "these", "those", "there", "they", "he", "she", "we", "you", "i", "what",
    "which", "who", "here", "all", "each", "some", "one", "such", "both", "many", "most", "none",
    "the", "a", "an", "because", "when", "if", "while", "since", "although", "as", "so", "but",
    "and", "or", "then", "thus", "however", "also", "our", "their", "its", "his", "her", "my", "your",
}  # fmt: skip
_NUMBERED = re.compile(
    r"^(?:(?:chapter|section|part|appendix|article|item|note)\s+[\w.]+\s*[:.\-–—]?\s*|\d+(?:\.\d+)*\.?\s+)(?=\S)", re.I
)
_DEFINITION = re.compile(
    r"^(?:(the|an?)\s+)?([^\W\d_][\w'-]*(?:\s+[^\W\d_][\w'-]*){0,3})\s+(is|are|was|were)\s+"
    r"(?!not\b|also\b|used\b|made\b|shown\b|given\b|based\b|available\b|required\b)",
    re.I,
)
_FIGURE = re.compile(r"\b(Figure|Fig\.|Table|Exhibit|Chart)\s+(\d+(?:\.\d+)*[a-z]?)\b")
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
        self.path = settings.data_dir / CACHE_FILE
        self.llm_calls = 0  # made by the worker (tests and the bench read it)
        self._lock = threading.Lock()
        self._cache: dict[str, dict[str, Any]] | None = None
        self._queue: queue.Queue[str] = queue.Queue()
        self._pending: list[str] = []  # names waiting, most recent last
        self._tried: set[str] = set()  # sha256s given to the LLM in this process
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
            questions = _unique([*entry.get("llm", []), *(q for q, _ in _rule_items(entry))])
            if questions:
                per_doc.append(questions)
            if len(per_doc) >= n:
                break
        out: list[str] = []
        for i in range(max((len(q) for q in per_doc), default=0)):
            out += [q[i] for q in per_doc if i < len(q)]
        return _unique(out)[:n]

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
        return [q for q in _unique(out) if q.lower() != question.strip().lower()][:n]

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
                    self._suggest(name)
            except Exception as e:  # a failed suggestion must not stop the worker
                logger.warning("no LLM questions for %s: %s", name, e)
            finally:
                self._queue.task_done()

    def _suggest(self, name: str) -> None:
        rec = self.registry.get(name)
        if rec is None or rec.status != "indexed":
            return
        entry = self._entry(rec)
        if "llm" in entry or rec.sha256 in self._tried:
            return
        self._tried.add(rec.sha256)
        llm = self.models.llm()
        if llm.metadata.model_name == "extractive":  # quotes passages; it writes no questions
            return
        text = _start_text(name, self.index)
        if not text.strip():
            return
        prompt = SUGGEST_PROMPT.format(title=_title(entry), text=text, n=3)
        self.llm_calls += 1
        reply = llm.complete(prompt, max_tokens=120).text
        self._store(rec.sha256, {**entry, "llm": parse_questions(reply)})


# ============================================================================ rules
def outline(name: str, index: VectorIndex) -> dict[str, Any]:
    """A document's title, headings ``[heading, position]`` (position: its page, or its
    section number) and definition questions, from its chunks in Chroma. The title is the
    first section's heading (Markdown, DOCX, HTML); for PDFs and text it is the file name,
    as a PDF's first line is as often a cover page's "UNITED STATES" as a title."""
    nodes = _ordered(name, index)
    headings: list[list[Any]] = []
    title = ""
    facts: list[str] = []
    seen_parts: set[Any] = set()
    text_all = "\n".join(n.text for n in nodes)
    for node in nodes:
        meta = node.metadata
        pos = meta.get("page") or meta.get("section") or 0
        path = [p.strip() for p in str(meta.get("heading") or "").split(">") if p.strip()]
        if path:
            title = title or (path[0] if meta.get("section") == 1 else "")
            if [path[-1], pos] not in headings:
                headings.append([path[-1], pos])
        elif not meta.get("section"):
            lines = [x for x in node.text.splitlines() if x.strip()]
            for line, after in itertools.pairwise(lines):
                heading = heading_line(line) if _is_body(after) else None
                if heading and [heading, pos] not in headings:
                    headings.append([heading, pos])
        if pos not in seen_parts:  # definitions among the first sentences of each page/section
            seen_parts.add(pos)
            facts += [q for q in (definition_question(x, text_all) for x in _sentences(node.text)[:3]) if q]
    headings = [h for h in headings if h[0] != title][:40]
    return {"name": name, "title": title, "headings": headings, "facts": _unique(facts)[:10]}


_HEADING_CHARS = re.compile(r"^[\w\s\-–—:'’&/(),.]+$")
_LOOSE_END = {"a", "an", "and", "as", "at", "by", "for", "from", "in", "is", "of", "on", "or", "the", "to", "with"}


def heading_line(line: str) -> str | None:
    """The heading a line of PDF/text is, cleaned ("Chapter 2: Capacity" → "Capacity"), or
    None. Numbered lines, ALL CAPS and Title Case lines of 2-8 words count; names, addresses
    and table cells mostly fail on their characters or on what follows them (``_is_body``)."""
    line = " ".join(line.split())
    if not 3 <= len(line) <= 80 or line[-1] in ".,;" or not _HEADING_CHARS.match(line):
        return None
    if re.search(r"(\w)\1{3,}|\d{4,}", line) or sum(c.isalpha() for c in line) < 0.7 * len(line.replace(" ", "")):
        return None
    numbered = _NUMBERED.match(line)
    body = line[numbered.end() :] if numbered else line
    words = re.sub(r"(?<=[^\W\d]{3})\s+\d{1,4}$", "", body).rstrip(":").split()  # a contents line's page number
    if not words or len(words) > 8 or not words[0][0].isupper() or words[-1].lower() in _LOOSE_END:
        return None
    if not any(len(w) >= 4 and w.isalpha() for w in words):
        return None
    significant = [w for w in words if len(w) >= 4 and w[0].isalpha()]
    caps = len(words) >= 2 and body.isupper()
    titled = len(words) >= 2 and all(w[0].isupper() for w in significant)
    if not (numbered or caps or titled):
        return None
    body = " ".join(words)
    return body.title() if body.isupper() else body


def _is_body(line: str) -> bool:
    """A line of running text (what follows a section heading), not another short label."""
    words = line.split()
    return len(words) >= 6 and sum(w[0].islower() for w in words if w[0].isalpha()) >= 2


def definition_question(sentence: str, text: str = "") -> str | None:
    """'Bananas are yellow fruit...' → 'What are bananas?' (None if it is no definition). The
    first word stays capitalised only if ``text`` (the document) has it so within a sentence."""
    sentence = sentence.strip()
    m = _DEFINITION.match(sentence)
    if not m or len(sentence) > 400 or not sentence[0].isupper():
        return None
    article, subject, verb = m.group(1), m.group(2), m.group(3).lower()
    words = subject.split()
    if any(w.lower() in _NOT_SUBJECTS for w in words) or (article and article.lower() == "the" and len(words) == 1):
        return None  # "It is", "Because traces are", "The answer is": no topic to ask about
    first = words[0]
    if not article and first[:1].isupper() and not first.isupper() and not re.search(rf"[\w,;] {first}\b", text):
        subject = first.lower() + subject[len(first) :]  # capitalised only because it starts the sentence
    verb = "is" if verb in ("is", "was") else "are"
    return f"What {verb} {article.lower() + ' ' if article else ''}{subject}?"


def parse_questions(reply: str, n: int = 3) -> list[str]:
    """The questions in an LLM reply: one per line, bullets and numbers removed."""
    reply = reply.split(SUGGEST_MARKER)[-1]
    out = []
    for line in reply.splitlines():
        q = " ".join(_BULLET.sub("", line).split()).strip("\"'")
        if (8 if q.isascii() else 4) <= len(q) <= 200 and q.endswith(("?", "？")):
            out.append(q)
    return _unique(out)[:n]


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


def _unique(items: list[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for item in items:
        key = item.strip().lower()
        if key and key not in seen:
            seen.add(key)
            out.append(item)
    return out


def _sentences(text: str) -> list[str]:
    lines = [x for x in text.splitlines() if x.strip() and not heading_line(x) and not x.lstrip().startswith("#")]
    return [s for s in re.split(r"(?<=[.!?])\s+", " ".join(lines)) if s.strip()]


def _ordered(name: str, index: VectorIndex) -> list:
    nodes = index.all_nodes([name])
    return sorted(
        nodes, key=lambda n: (n.metadata.get("page") or n.metadata.get("section") or 0, n.start_char_idx or 0)
    )


def _start_text(name: str, index: VectorIndex) -> str:
    text = ""
    for node in _ordered(name, index):
        text += node.text.strip() + "\n"
        if len(text) >= PROMPT_CHARS:
            break
    return text[:PROMPT_CHARS]
