"""The model's second look at the candidate pages (``page_look``).

A broad question about a filing ("How did Intel's restructuring charges change …?") is
matched by many chunks of many pages: the statement, the discussion restating it, the note
breaking it down, the same statement of the filing of another quarter. Ranked by their
words, the page that reports the line item is often sixth or twelfth (docs/evaluation.md,
"The model's second look"). What tells those pages apart is short and structural — the
file, the page's titles, its column headers (the periods), its row labels — and a small
model can read a dozen such lines in one prompt where it could not read a dozen pages. So,
for a question that names a line item, and only when the top passages come from different
pages, the model is shown one line per candidate page and names the page(s) that hold the
line item for the period asked; their best chunk is moved to the top of the passages. The
model's reply is a vote, never an answer: a reply naming no shown page changes nothing.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Sequence
from typing import Any

from llama_index.core.schema import NodeWithScore

from rag_core.prompts import PAGE_LOOK_PROMPT
from rag_core.retrieval.pages import STATEMENT_TITLE, row_label
from rag_core.retrieval.result import Retrieval
from rag_core.text import is_header, is_title

logger = logging.getLogger(__name__)

PICKED = 2  # pages the model may promote
LINE_CHARS = 200  # the longest description of one page (the prompt stays near 50 tokens a page)
LABELS = 6  # row labels shown per page
MAX_TOKENS = 12  # "4, 9" or "none"

PageKey = tuple[str, int]
_PERIOD = re.compile(
    r"\b(?:ended|months|weeks|quarter|(?:19|20)\d\d|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)",
    re.IGNORECASE,
)


def page_of(hit: NodeWithScore) -> PageKey | None:
    meta = hit.node.metadata or {}
    page = meta.get("page")
    if not isinstance(page, int):
        return None
    return str(meta.get("doc_key") or meta.get("file_name") or ""), page


def spans_pages(hits: Sequence[NodeWithScore]) -> bool:
    """Whether the passages come from more than one page (one page: nothing to choose)."""
    return len({page_of(h) for h in hits}) > 1


def one_subject(stats: dict[str, Any]) -> bool:
    """Whether the search was about one thing at most (two companies compared: each has its
    own pages among the passages, and one document's pick would push the other's out)."""
    return len(stats.get("entities") or ()) <= 1


def candidate_pages(ranked: Sequence[NodeWithScore], most: int) -> list[tuple[PageKey, NodeWithScore]]:
    """The first ``most`` distinct pages of ``ranked``, each with its best-ranked chunk."""
    out: dict[PageKey, NodeWithScore] = {}
    for hit in ranked:
        key = page_of(hit)
        if key is not None and key not in out:
            out[key] = hit
            if len(out) >= most:
                break
    return list(out.items())


def describe_page(page: int, texts: Sequence[str]) -> str:
    """One line for a page: its number, its titles and column headers, its row labels (a page
    without any: its first line, a section heading as often as not)."""
    lines = [line.strip() for text in texts for line in text.splitlines() if line.strip()]
    titles: list[str] = []
    headers: list[str] = []
    labels: list[str] = []
    for line in lines:
        if is_title(line):
            titles.append(line)
        elif is_header(line):
            headers.append(line)
        else:
            label = row_label(line)
            if label and label not in labels and len(labels) < LABELS:
                labels.append(label[:32])
    # a statement's own title over the part's ("PART I — FINANCIAL INFORMATION")
    title = next((t for t in titles if STATEMENT_TITLE.search(t)), titles[0] if titles else "")[:60]
    # the period columns tell a quarter's page from the year-to-date's and another filing's
    periods = [h for h in dict.fromkeys(headers) if _PERIOD.search(h)] or headers[:1]
    header = " ".join(" ".join(h[:40] for h in periods).split())[:64]
    head = " | ".join(x for x in (title, header) if x) or (lines[0][:100] if lines else "")
    text = f"page {page}: {head}"
    if labels:
        text += "; rows: " + "; ".join(labels)
    return " ".join(text.split())[:LINE_CHARS]


def parse_picks(reply: str, shown: Sequence[int]) -> list[int]:
    """The shown page numbers the reply names, best first, at most ``PICKED``."""
    if re.match(r"\s*none\b", reply or "", re.IGNORECASE):
        return []
    out: list[int] = []
    for m in re.finditer(r"\d+", reply or ""):
        page = int(m.group())
        if page in shown and page not in out:
            out.append(page)
    return out[:PICKED]


def prompt_tokens(raw: Any) -> int | None:
    """The prompt tokens llama.cpp (or an OpenAI-style API) says it read, when it says."""
    if not isinstance(raw, dict):
        return None
    usage = raw.get("usage") or {}
    timings = raw.get("timings") or {}
    found = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    if found is None and isinstance(timings, dict):
        found = timings.get("prompt_n")
    return int(found) if isinstance(found, int | float) else None


def second_look(
    question: str,
    found: Retrieval,
    candidates: Sequence[NodeWithScore],
    page_texts: Callable[[PageKey], list[str]],
    llm: Any,
    top_k: int,
    pages: int,
) -> Retrieval:
    """``found`` with the pages the model picks among the first ``pages`` candidate pages
    (``found``'s own first, then ``candidates``) moved to the top; ``found`` as it is when the
    model picks none of them or fails. ``stats["page_look"]`` says what it saw and cost."""
    # The pages of the document the search ranked first, not its neighbours': measured, the
    # model given the same table of four quarters' filings picked another quarter's as often
    # as the one asked (docs/evaluation.md); which filing is the search's (names, dates, "latest").
    first = page_of(found.hits[0]) if found.hits else None
    shown = [
        (key, hit)
        for key, hit in candidate_pages([*found.hits, *candidates], len(found.hits) + len(candidates))
        if first and key[0] == first[0]
    ][:pages]
    if len(shown) < 2:
        return found
    # one file: the lines are numbered by the pages themselves (numbered 1..n beside "page 4",
    # the model answered the page number as often as the line's)
    lines = [describe_page(key[1], page_texts(key)) for key, _hit in shown]
    prompt = PAGE_LOOK_PROMPT.format(file=shown[0][0][0], pages="\n".join(lines), question=" ".join(question.split()))
    started = time.perf_counter()
    try:
        response = llm.complete(prompt, max_tokens=MAX_TOKENS)
    except Exception as e:  # a second look is a bonus: never fail the search for it
        logger.warning("page look skipped: %s", e)
        return Retrieval(found.hits, found.extras, {**found.stats, "page_look": {"error": str(e)[:200]}})
    by_page = {key[1]: (key, hit) for key, hit in shown}
    picks = [by_page[page] for page in parse_picks(str(getattr(response, "text", response)), list(by_page))]
    look: dict[str, Any] = {
        "pages": len(shown),
        "picked": [list(key) for key, _hit in picks],
        "seconds": round(time.perf_counter() - started, 3),
        "prompt_tokens": prompt_tokens(getattr(response, "raw", None)) or len(prompt) // 4,
    }
    stats = {**found.stats, "page_look": look}
    if not picks:
        return Retrieval(found.hits, found.extras, stats)
    # the picked page's chunk already among the passages keeps its own (it may be widened)
    own = {page_of(h): h for h in reversed(found.hits)}
    promoted = [own.get(key, hit) for key, hit in picks]
    ids = {h.node.node_id for h in promoted}
    hits = [*promoted, *(h for h in found.hits if h.node.node_id not in ids)][:top_k]
    extras = {h.node.node_id: found.extras.get(h.node.node_id, {"page_look": 1}) for h in hits}
    return Retrieval(hits, extras, stats)
