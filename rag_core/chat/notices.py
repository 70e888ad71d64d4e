"""What a turn says beside its answer once the search is settled: the notices shown above it,
and the refusal it gives when nothing was found (kept out of ``turn.py``, which runs the phases)."""

from __future__ import annotations

from typing import Any

from rag_core.payloads import Source
from rag_core.prompts import NO_ANSWER
from rag_core.text_injection import excerpt


def search_notices(
    asked: list[str], notices: list[str], language: list[str], stats: dict[str, Any], found: bool
) -> list[str]:
    """The question's own notices, the search's, the language's; and the names of a question
    that the documents found do not mention (the answer is about the rest)."""
    said = [*asked, *notices, *language]
    unmentioned = stats.get("unmentioned_names")
    if unmentioned and found:
        said.append(f"The documents found don't mention {', '.join(unmentioned)}: the answer is about the rest.")
    unsure = stats.get("unsure_names")
    if unsure and found:
        said.append(
            f"No document is about {', '.join(unsure)}: the answer is read from pages that only mention "
            f"{'it' if len(unsure) == 1 else 'them'}, so check that its figures are "
            f"{'its' if len(unsure) == 1 else 'theirs'}."
        )
    return said


def refusal(stats: dict[str, Any], found: bool) -> str:
    """The answer when there is nothing to answer from: the documents don't cover a name the
    question gives (``entity_scope``), no indexed document names it, or nothing matched."""
    missing = stats.get("missing_names") if not found else None
    return stats.get("refusal") or (
        f"The documents don't mention {', '.join(missing)}: no indexed document names "
        f"{'it' if len(missing) == 1 else 'them'}, so there is nothing to answer from."
        if missing
        else NO_ANSWER
    )


def instruction_notices(sources: list[Source]) -> list[str]:
    """One notice per document whose passages hold text addressed to an AI assistant
    (``text_injection``): which document, which pages, how it begins. That text was cut from
    what the model read, and no figure written in it counts as supported."""
    pages: dict[str, list[str]] = {}
    first: dict[str, str] = {}
    for src in sources:
        said = excerpt(src.get("text") or "")
        if not said:
            continue
        file = str(src.get("file") or "a document")
        page = src.get("page_label") or src.get("page")
        first.setdefault(file, said)
        where = pages.setdefault(file, [])
        if page is not None and str(page) not in where:
            where.append(str(page))
    notices = []
    for file, where in pages.items():
        at = f", page{'s' * (len(where) > 1)} {', '.join(where)}," if where else ""
        notices.append(
            f"{file}{at} holds text addressed to AI assistants (“{first[file]}”). It is an instruction, not "
            "evidence: it was left out of what the model read, and no figure written in it is counted as supported."
        )
    return notices
