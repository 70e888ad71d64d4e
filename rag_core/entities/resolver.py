"""The profiles of the indexed documents, and which documents a question's names are about.

Profiles are kept in the registry (``document_entities``), written when a document is
ingested. A document without one (indexed before profiles existed, or read by an older
reader) is read from its stored chunks the first time the profiles are needed, or by
``check --repair``: nothing is parsed or embedded again.
"""

from __future__ import annotations

import json
import logging
import math
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from rag_core.entities.names import Name, name_matches
from rag_core.entities.profile import READER, Profile, read_profile
from rag_core.entities.sections import with_sections
from rag_core.index import VectorIndex
from rag_core.storage import DocumentRegistry

logger = logging.getLogger(__name__)

MIN_CHUNKS = 3  # a shorter document says nothing its passages don't: searched as passages, not by subject
COVER_PARTS = 3  # a name on this many pages of a document (fewer for a short one) is more than a passing mention


def read_and_keep(index: VectorIndex, registry: DocumentRegistry, name: str, sha256: str) -> Profile:
    """Read ``name``'s profile from its stored chunks and keep it in the registry."""
    nodes = index.document_nodes(name)
    ordered = sorted(
        nodes,
        key=lambda n: (
            n.metadata.get("page") if isinstance(n.metadata.get("page"), int) else 1 << 30,
            n.start_char_idx or 0,
        ),
    )
    chunks = [(n.metadata.get("page"), n.get_content()) for n in ordered]
    profile = with_sections(read_profile(name, chunks), name, chunks)
    registry.set_entities(name, sha256, READER, json.dumps(profile.as_json(), ensure_ascii=False))
    return profile


class EntityIndex:
    """The profiles of the indexed documents, cached until the index changes."""

    def __init__(self, index: VectorIndex, registry: DocumentRegistry) -> None:
        self.index = index
        self.registry = registry
        self._lock = threading.Lock()
        self._cached: tuple[Any, Entities] | None = None

    def current(self) -> Entities:
        """The profiles of every indexed document (unread ones read and kept first)."""
        version = self.index.version
        with self._lock:
            if self._cached is None or self._cached[0] != version:
                self._cached = (version, Entities(self._profiles()))
            return self._cached[1]

    def missing(self) -> list[str]:
        """Indexed documents without a current profile."""
        rows = self.registry.entities()
        return [r.name for r in self.registry.list() if not _current(rows.get(r.name), r.sha256)]

    def fill(self) -> list[str]:
        """Read and keep every missing profile; the documents read."""
        with self._lock:
            self._cached = None
            done = []
            rows = self.registry.entities()
            for rec in self.registry.list():
                if not _current(rows.get(rec.name), rec.sha256):
                    read_and_keep(self.index, self.registry, rec.name, rec.sha256)
                    done.append(rec.name)
            return done

    def _profiles(self) -> dict[str, Profile]:
        rows = self.registry.entities()
        out: dict[str, Profile] = {}
        for rec in self.registry.list():
            row = rows.get(rec.name)
            try:
                if _current(row, rec.sha256):
                    out[rec.name] = Profile.from_json(json.loads(row[2]))  # type: ignore[index]
                    continue
            except (ValueError, TypeError, KeyError) as e:
                logger.warning("the profile of %s is unreadable (%s): reading it again", rec.name, e)
            try:
                out[rec.name] = read_and_keep(self.index, self.registry, rec.name, rec.sha256)
            except Exception:  # a profile is a help: never fail a question for it
                logger.exception("could not read what %s is about", rec.name)
        return out


def _current(row: tuple[str, int, str] | None, sha256: str) -> bool:
    return row is not None and row[0] == sha256 and row[1] == READER


@dataclass
class Coverage:
    """How the documents cover a name no document is about."""

    state: str  # absent | word | passing | stated | covered
    docs: set[str]  # the documents that mention it (as a word or as a name)


class Entities:
    """What each document is about, and the names it uses (``Profile``), for deciding which
    documents a question's names are about.

    The things decided over are *units*: a document, or for a document that joins others'
    pages (``Profile.sections``) each of its sections, keyed "<document> (pages F-L)". A
    question about one company of a binder of filings is then answered from that company's
    pages of it; every other document is one unit keyed by its name, as before."""

    def __init__(self, profiles: dict[str, Profile]) -> None:
        self.profiles = profiles  # per document
        self.units: dict[str, Profile] = {}
        self._document: dict[str, str] = {}
        self._spans: dict[str, list[tuple[int, int, str]]] = {}
        for doc, profile in profiles.items():
            if not profile.sections:
                self.units[doc] = profile
                self._document[doc] = doc
                continue
            for section in profile.sections:
                key = f"{doc} (pages {section.first}-{section.last})"
                self.units[key] = section.profile
                self._document[key] = doc
                self._spans.setdefault(doc, []).append((section.first, section.last, key))
        # Units long enough to speak for their subjects.
        self.speaking = {d for d, p in self.units.items() if p.subjects and p.chunks >= MIN_CHUNKS}

    def units_of(self, docs: Iterable[str]) -> set[str]:
        """The units of these documents (a document is its own unit unless it has sections)."""
        out: set[str] = set()
        for doc in docs:
            spans = self._spans.get(doc)
            out.update([key for _, _, key in spans] if spans else [doc])
        return out

    def document(self, unit: str) -> str:
        """The document a unit is (part of)."""
        return self._document.get(unit, unit)

    def pages(self, unit: str) -> tuple[int, int] | None:
        """The pages of a section (None: a whole document)."""
        for first, last, key in self._spans.get(self.document(unit), ()):
            if key == unit:
                return first, last
        return None

    def section_of(self, doc: str, page: Any) -> tuple[str, int]:
        """The unit a page of ``doc`` belongs to, and that unit's first page (its cover)."""
        if isinstance(page, int):
            for first, last, key in self._spans.get(doc, ()):
                if first <= page <= last:
                    return key, first
        return doc, 1

    def sectioned(self) -> bool:
        """Whether any document has sections."""
        return bool(self._spans)

    def about(self, name: Name, allowed: set[str] | None = None) -> set[str]:
        """The documents about what ``name`` names (by a subject's name or ticker)."""
        out = set()
        for doc in self.speaking if allowed is None else self.speaking & allowed:
            for subject in self.units[doc].subjects:
                if any(name_matches(name.terms, tuple(alias)) for alias in subject.aliases) or (
                    name.capitals and len(name.terms) == 1 and name.terms[0] in subject.tickers
                ):
                    out.add(doc)
                    break
        return out

    def label(self, doc: str) -> str | None:
        """What ``doc`` is about, as it writes it ("NVIDIA Corporation"), if it speaks for a subject."""
        if doc not in self.speaking:
            return None
        return " and ".join(s.name for s in self.units[doc].subjects)

    def coverage(self, name: Name, mentioned: set[str]) -> Coverage:
        """How ``mentioned`` (the documents that hold the name's terms in any case) cover it:
        ``covered`` when one of them does not speak for a subject (a note, a passage: it may
        be about anything it says) or names it on enough of its pages; ``stated`` when those
        speaking for other subjects name it on a page or two, in a sentence that states a
        figure ("a MacBook Pro with … 2 GB RAM"); ``passing`` when they name it on a page or two
        otherwise; ``word`` when they hold it only as a word ("target") or in capitals lines;
        ``absent`` when none holds it."""
        if not mentioned:
            return Coverage("absent", mentioned)
        if mentioned - self.speaking:
            return Coverage("covered", mentioned)
        if not name.owner and any(all(t in self.units[d].headings for t in name.terms) for d in mentioned):
            return Coverage("covered", mentioned)  # a section of a document ("the section on Capacity")
        if any(all(t in self.units[d].rows for t in name.terms) for d in mentioned):
            return Coverage("covered", mentioned)  # an item its tables report ("What was Data Center revenue?")
        best = "word"
        for doc in mentioned:
            profile = self.units[doc]
            # A name of several words counts as written as a name where any of them is: a
            # heading's first word ("Condensed Consolidated Statements") starts its line.
            spread = max(profile.names.get(t, 0) for t in name.terms)
            if spread >= min(COVER_PARTS, math.ceil(profile.parts / 2)) and spread > 0:
                return Coverage("covered", mentioned)
            if spread > 0 and best != "stated":
                best = "stated" if all(t in profile.stated for t in name.terms) else "passing"
        return Coverage(best, mentioned)

    def naming(self, name: Name, mentioned: set[str]) -> set[str]:
        """Of ``mentioned``, the units that write ``name`` as a name on enough of their pages to
        be more than a passing mention: "Amex" on 31 pages of American Express's 10-K, "AMD" on
        48 of Advanced Micro Devices'. A question naming it is about those."""
        out = set()
        for doc in mentioned & self.speaking:
            profile = self.units[doc]
            spread = max((profile.names.get(t, 0) for t in name.terms), default=0)
            if spread > 0 and spread >= min(COVER_PARTS, math.ceil(profile.parts / 2)):
                out.add(doc)
        return out

    def subjects(self, allowed: set[str] | None = None) -> list[str]:
        """What the documents are about, most documents first (for saying what they do cover)."""
        count: dict[str, int] = {}
        for doc in self.speaking if allowed is None else self.speaking & allowed:
            label = self.label(doc)
            if label:
                count[label] = count.get(label, 0) + 1
        return sorted(count, key=lambda k: (-count[k], k))
