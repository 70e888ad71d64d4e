"""The keyword index's tables in SQLite, kept in step as chunks come and go (``index.db``).

FTS5 indexes each chunk's and each page's space-joined tokens with its ``ascii`` tokenizer
(``.`` and ``,`` kept inside tokens, so "1,234.5" stays one term; every non-ASCII character
is part of a token, so CJK characters and bigrams stay whole): its terms are exactly
``rag_core.text.tokenize``'s. The FTS5 tables are contentless with ``detail=none``: they
keep only which rows hold a term; the rows live in ``kw_chunks`` and ``kw_pages`` (a page's
tokens are its chunks', in order).

Per document and term, ``kw_doc_terms`` counts the chunks and pages holding it (for the
statistics of a search restricted to some documents) and marks the terms of its file name;
``kw_terms`` keeps the same counts over every document. Every write changes only the rows
of the chunks, pages and terms of the document it writes, in one transaction.

The SQL runs on PostgreSQL too (``rag_core.storage.pg_keywords``, the team's keyword index):
only the postings differ (``_post``/``_unpost``: FTS5 here, a GIN-indexed ``tsvector`` there).
"""

from __future__ import annotations

import json
import zlib
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from rag_core.storage.keyword_index import ChunkRecord, stem_of
from rag_core.text import tokenize

_BATCH = 500  # ids per IN (...) list


def in_batches(items: Sequence, size: int = _BATCH) -> Iterator[Sequence]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def placeholders(n: int) -> str:
    return ",".join("?" * n)


def pack_meta(meta: dict) -> bytes:
    """A chunk's metadata dict (2 KB of JSON on average, mostly LlamaIndex's node envelope), compressed."""
    return zlib.compress(json.dumps(meta, ensure_ascii=False).encode("utf-8"), 6)


def unpack_meta(blob: bytes) -> dict:
    return json.loads(zlib.decompress(blob))


def fts_phrase(term: str) -> str:
    """An FTS5 query for one token (tokens never hold a double quote)."""
    return '"' + term.replace('"', "") + '"'


class KeywordDB(Protocol):
    """Where the tables are: ``index.db`` (``IndexDB``) or a PostgreSQL schema
    (``rag_core.storage.pg_keywords``); both take the same SQL with ``?`` placeholders."""

    def transaction(self) -> AbstractContextManager[Any]: ...

    def query(self, sql: str, params: Sequence[Any] = ..., /) -> list[Any]: ...

    def meta(self, key: str) -> str | None: ...

    def set_meta(self, key: str, value: str | None) -> None: ...


class KeywordTables:
    """Writing the keyword index: chunks added and removed, pages and term counts with them."""

    def __init__(self, db: KeywordDB) -> None:
        self.db = db

    # ------------------------------------------------------------------ writing
    def add(self, records: Sequence[ChunkRecord]) -> None:
        if not records:
            return
        with self.db.transaction() as c:
            ids = [r.node_id for r in records]
            present = {
                row[0]
                for batch in in_batches(ids)
                for row in c.execute(
                    f"SELECT node_id FROM kw_chunks WHERE node_id IN ({placeholders(len(batch))})", batch
                )
            }
            deltas: Counter[tuple[str, int]] = Counter()
            docs: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
            touched: set[tuple[int, int]] = set()
            docnos: dict[str, int] = {}
            for record in records:
                if record.node_id in present:
                    continue
                present.add(record.node_id)
                docno = docnos.get(record.doc) or docnos.setdefault(record.doc, self._docno(c, record))
                tokens = record.tokens
                joined = " ".join(tokens)
                rowid = c.execute(
                    "INSERT INTO kw_chunks (node_id, ref_doc_id, docno, page, length, tokens, text, meta)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                    (
                        record.node_id,
                        record.ref_doc_id,
                        docno,
                        record.page,
                        len(tokens),
                        joined,
                        record.text,
                        pack_meta(record.meta),
                    ),
                ).fetchone()[0]
                self._post(c, "kw_chunks", rowid, tokens)
                deltas.update((t, docno) for t in set(tokens))
                docs[docno][0] += 1
                docs[docno][1] += len(tokens)
                if record.page is not None:
                    touched.add((docno, record.page))
            self._apply(c, deltas, {}, docs)
            self._refresh_pages(c, touched)

    def delete_refs(self, ref_doc_ids: Iterable[str]) -> None:
        refs = list(ref_doc_ids)
        with self.db.transaction() as c:
            rows = [
                row
                for batch in in_batches(refs)
                for row in c.execute(
                    f"SELECT id, docno, page, length, tokens FROM kw_chunks WHERE ref_doc_id IN ({placeholders(len(batch))})",
                    batch,
                )
            ]
            self._remove_chunks(c, rows)

    def delete_docs(self, names: Iterable[str]) -> None:
        with self.db.transaction() as c:
            for name in names:
                found = c.execute("SELECT docno FROM kw_docs WHERE doc = ?", (name,)).fetchone()
                if found is None:
                    continue
                docno = found[0]
                self._unpost_doc(c, docno)
                terms = c.execute("SELECT term, df, pdf FROM kw_doc_terms WHERE docno = ?", (docno,)).fetchall()
                c.executemany(
                    "UPDATE kw_terms SET df = df - ?, pdf = pdf - ? WHERE term = ?",
                    [(df, pdf, t) for t, df, pdf in terms],
                )
                for batch in in_batches([t for t, _, _ in terms]):
                    c.execute(
                        f"DELETE FROM kw_terms WHERE term IN ({placeholders(len(batch))}) AND df <= 0 AND pdf <= 0",
                        batch,
                    )
                for table in ("kw_doc_terms", "kw_chunks", "kw_pages", "kw_docs"):
                    c.execute(f"DELETE FROM {table} WHERE docno = ?", (docno,))

    def clear(self) -> None:
        with self.db.transaction() as c:
            self._unpost_all(c)
            for table in ("kw_docs", "kw_chunks", "kw_pages", "kw_terms", "kw_doc_terms"):
                c.execute(f"DELETE FROM {table}")

    # ------------------------------------------------------------------ postings (SQLite: FTS5)
    def _post(self, c: Any, table: str, rowid: int, tokens: list[str]) -> None:
        """Index a new row's tokens (``kw_chunks`` or ``kw_pages``) for ``rows_with``."""
        c.execute(f"INSERT INTO {table}_fts (rowid, tokens) VALUES (?, ?)", (rowid, " ".join(tokens)))

    def _unpost(self, c: Any, table: str, rowid: int, joined: str) -> None:
        """Forget a row's tokens before it changes or goes (a contentless FTS5 table needs them)."""
        c.execute(f"INSERT INTO {table}_fts ({table}_fts, rowid, tokens) VALUES ('delete', ?, ?)", (rowid, joined))

    def _unpost_doc(self, c: Any, docno: int) -> None:
        for table in ("kw_chunks", "kw_pages"):
            for rowid, joined in c.execute(f"SELECT id, tokens FROM {table} WHERE docno = ?", (docno,)).fetchall():
                self._unpost(c, table, rowid, joined)

    def _unpost_all(self, c: Any) -> None:
        for table in ("kw_chunks_fts", "kw_pages_fts"):
            c.execute(f"INSERT INTO {table} ({table}) VALUES ('delete-all')")

    # ------------------------------------------------------------------ write helpers
    def _docno(self, c: Any, record: ChunkRecord) -> int:
        found = c.execute("SELECT docno FROM kw_docs WHERE doc = ?", (record.doc,)).fetchone()
        if found is not None:
            return int(found[0])
        docno = int(c.execute("INSERT INTO kw_docs (doc) VALUES (?) RETURNING docno", (record.doc,)).fetchone()[0])
        named: Counter[str] = Counter()
        for term in set(tokenize(record.file_name or record.doc)):
            named[term] |= 1
        for term in set(tokenize(stem_of(record.doc))):
            named[term] |= 2
        c.executemany(
            "INSERT INTO kw_doc_terms (term, docno, named) VALUES (?, ?, ?)"
            " ON CONFLICT (term, docno) DO UPDATE SET named = kw_doc_terms.named | excluded.named",
            [(t, docno, bits) for t, bits in named.items()],
        )
        return docno

    def _apply(
        self,
        c: Any,
        chunk_deltas: Counter[tuple[str, int]],
        page_deltas: dict[tuple[str, int], int],
        docs: dict[int, list[int]],
    ) -> None:
        """Add term counts (chunks, pages holding each term, per document and in all) and
        document sizes; drop what fell to nothing."""
        keys = set(chunk_deltas) | set(page_deltas)
        if keys:
            pairs = [(t, d, chunk_deltas.get((t, d), 0), page_deltas.get((t, d), 0)) for t, d in keys]
            c.executemany(
                "INSERT INTO kw_doc_terms (term, docno, df, pdf) VALUES (?, ?, ?, ?) ON CONFLICT (term, docno)"
                " DO UPDATE SET df = kw_doc_terms.df + excluded.df, pdf = kw_doc_terms.pdf + excluded.pdf",
                pairs,
            )
            totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
            for t, _, df, pdf in pairs:
                totals[t][0] += df
                totals[t][1] += pdf
            c.executemany(
                "INSERT INTO kw_terms (term, df, pdf) VALUES (?, ?, ?) ON CONFLICT (term)"
                " DO UPDATE SET df = kw_terms.df + excluded.df, pdf = kw_terms.pdf + excluded.pdf",
                [(t, df, pdf) for t, (df, pdf) in totals.items()],
            )
            falling = [t for t, (df, pdf) in totals.items() if df < 0 or pdf < 0]
            for batch in in_batches(falling):
                c.execute(
                    f"DELETE FROM kw_terms WHERE term IN ({placeholders(len(batch))}) AND df <= 0 AND pdf <= 0", batch
                )
            for docno in {d for _, d, df, pdf in pairs if df < 0 or pdf < 0}:
                c.execute("DELETE FROM kw_doc_terms WHERE docno = ? AND df <= 0 AND pdf <= 0 AND named = 0", (docno,))
        for docno, (chunks, length, pages, page_length) in docs.items():
            c.execute(
                "UPDATE kw_docs SET chunks = chunks + ?, length = length + ?, pages = pages + ?,"
                " page_length = page_length + ? WHERE docno = ?",
                (chunks, length, pages, page_length, docno),
            )

    def _remove_chunks(self, c: Any, rows: list[tuple]) -> None:
        deltas: Counter[tuple[str, int]] = Counter()
        docs: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
        touched: set[tuple[int, int]] = set()
        for rowid, docno, page, length, tokens in rows:
            self._unpost(c, "kw_chunks", rowid, tokens)
            c.execute("DELETE FROM kw_chunks WHERE id = ?", (rowid,))
            deltas.update({(t, docno): -1 for t in set(tokens.split())})
            docs[docno][0] -= 1
            docs[docno][1] -= length
            if page is not None:
                touched.add((docno, page))
        self._apply(c, deltas, {}, docs)
        self._refresh_pages(c, touched)
        for docno in docs:
            left = c.execute("SELECT chunks FROM kw_docs WHERE docno = ?", (docno,)).fetchone()
            if left is None or left[0] > 0:
                continue
            c.execute("DELETE FROM kw_doc_terms WHERE docno = ?", (docno,))
            c.execute("DELETE FROM kw_docs WHERE docno = ?", (docno,))

    def _refresh_pages(self, c: Any, touched: set[tuple[int, int]]) -> None:
        """Rewrite the pages whose chunks changed: a page's tokens are its chunks' in order."""
        deltas: Counter[tuple[str, int]] = Counter()
        docs: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
        for docno, page in sorted(touched):
            old = c.execute(
                "SELECT id, length, tokens FROM kw_pages WHERE docno = ? AND page = ?", (docno, page)
            ).fetchone()
            chunks = c.execute(
                "SELECT length, tokens FROM kw_chunks WHERE docno = ? AND page = ? ORDER BY id", (docno, page)
            ).fetchall()
            joined = " ".join(t for _, t in chunks if t)
            length = sum(n for n, _ in chunks)
            if old is not None:
                self._unpost(c, "kw_pages", old[0], old[2])
                deltas.update({(t, docno): -1 for t in set(old[2].split())})
                docs[docno][2] -= 1
                docs[docno][3] -= old[1]
            if not chunks:
                if old is not None:
                    c.execute("DELETE FROM kw_pages WHERE id = ?", (old[0],))
                continue
            if old is None:
                rowid = c.execute(
                    "INSERT INTO kw_pages (docno, page, length, tokens) VALUES (?, ?, ?, ?) RETURNING id",
                    (docno, page, length, joined),
                ).fetchone()[0]
            else:
                rowid = old[0]
                c.execute("UPDATE kw_pages SET length = ?, tokens = ? WHERE id = ?", (length, joined, rowid))
            self._post(c, "kw_pages", rowid, joined.split())
            deltas.update({(t, docno): 1 for t in set(joined.split())})
            docs[docno][2] += 1
            docs[docno][3] += length
        pages = {key: n for key, n in deltas.items() if n}
        self._apply(c, Counter(), pages, docs)
