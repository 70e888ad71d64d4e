"""The keyword index in SQLite: FTS5 for the postings, plain tables for the rest (``index.db``).

FTS5 indexes each chunk's and each page's space-joined tokens with its ``ascii`` tokenizer
(``.`` and ``,`` kept inside tokens, so "1,234.5" stays one term; every non-ASCII character
is part of a token, so CJK characters and bigrams stay whole): its terms are exactly
``rag_core.text.tokenize``'s. The tables are contentless with ``detail=none``: FTS5 keeps
only which rows hold a term, the rows live in ``kw_chunks``/``kw_pages``. FTS5's own
``bm25()`` is not used: it scores every row that holds any query term (0.6–0.9 s for a
question of common words at 100,000 chunks) and its idf differs from the one Docent's
evaluation figures were made with; ``rag_core.retrieval.keywords`` scores instead.

Per document and term, ``kw_doc_terms`` counts the chunks and pages holding it (for the
statistics of a search restricted to some documents) and marks the terms of its file name;
``kw_terms`` keeps the same counts over every document. Every write changes only the rows
of the chunks, pages and terms of the document it writes.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence

from llama_index.core.schema import TextNode

from rag_core.storage.indexdb import IndexDB
from rag_core.storage.keyword_index import ChunkRecord, KeywordIndex, Row, Scope, stem_of, to_node
from rag_core.text import tokenize

_BATCH = 500  # ids per IN (...) list


def _batches(items: Sequence, size: int = _BATCH) -> Iterator[Sequence]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _marks(n: int) -> str:
    return ",".join("?" * n)


def _phrase(term: str) -> str:
    """An FTS5 query for one token (tokens never hold a double quote)."""
    return '"' + term.replace('"', "") + '"'


class SQLiteKeywordIndex(KeywordIndex):
    def __init__(self, db: IndexDB) -> None:
        self.db = db

    # ------------------------------------------------------------------ writing
    def add(self, records: Sequence[ChunkRecord]) -> None:
        if not records:
            return
        with self.db.transaction() as c:
            ids = [r.node_id for r in records]
            present = {
                row[0]
                for batch in _batches(ids)
                for row in c.execute(f"SELECT node_id FROM kw_chunks WHERE node_id IN ({_marks(len(batch))})", batch)
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
                row = c.execute(
                    "INSERT INTO kw_chunks (node_id, ref_doc_id, docno, page, length, tokens, text, meta)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        record.node_id,
                        record.ref_doc_id,
                        docno,
                        record.page,
                        len(tokens),
                        joined,
                        record.text,
                        json.dumps(record.meta, ensure_ascii=False),
                    ),
                )
                c.execute("INSERT INTO kw_chunks_fts (rowid, tokens) VALUES (?, ?)", (row.lastrowid, joined))
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
                for batch in _batches(refs)
                for row in c.execute(
                    f"SELECT id, docno, page, length, tokens FROM kw_chunks WHERE ref_doc_id IN ({_marks(len(batch))})",
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
                for rowid, tokens in c.execute("SELECT id, tokens FROM kw_chunks WHERE docno = ?", (docno,)).fetchall():
                    c.execute(
                        "INSERT INTO kw_chunks_fts (kw_chunks_fts, rowid, tokens) VALUES ('delete', ?, ?)",
                        (rowid, tokens),
                    )
                for rowid, tokens in c.execute("SELECT id, tokens FROM kw_pages WHERE docno = ?", (docno,)).fetchall():
                    c.execute(
                        "INSERT INTO kw_pages_fts (kw_pages_fts, rowid, tokens) VALUES ('delete', ?, ?)",
                        (rowid, tokens),
                    )
                terms = c.execute("SELECT term, df, pdf FROM kw_doc_terms WHERE docno = ?", (docno,)).fetchall()
                c.executemany(
                    "UPDATE kw_terms SET df = df - ?, pdf = pdf - ? WHERE term = ?",
                    [(df, pdf, t) for t, df, pdf in terms],
                )
                for batch in _batches([t for t, _, _ in terms]):
                    c.execute(
                        f"DELETE FROM kw_terms WHERE term IN ({_marks(len(batch))}) AND df <= 0 AND pdf <= 0", batch
                    )
                for table in ("kw_doc_terms", "kw_chunks", "kw_pages", "kw_docs"):
                    c.execute(f"DELETE FROM {table} WHERE docno = ?", (docno,))

    def clear(self) -> None:
        with self.db.transaction() as c:
            for table in ("kw_chunks_fts", "kw_pages_fts"):
                c.execute(f"INSERT INTO {table} ({table}) VALUES ('delete-all')")
            for table in ("kw_docs", "kw_chunks", "kw_pages", "kw_terms", "kw_doc_terms"):
                c.execute(f"DELETE FROM {table}")

    # ------------------------------------------------------------------ write helpers
    def _docno(self, c: sqlite3.Connection, record: ChunkRecord) -> int:
        found = c.execute("SELECT docno FROM kw_docs WHERE doc = ?", (record.doc,)).fetchone()
        if found is not None:
            return int(found[0])
        docno = int(c.execute("INSERT INTO kw_docs (doc) VALUES (?)", (record.doc,)).lastrowid or 0)
        named: Counter[str] = Counter()
        for term in set(tokenize(record.file_name or record.doc)):
            named[term] |= 1
        for term in set(tokenize(stem_of(record.doc))):
            named[term] |= 2
        c.executemany(
            "INSERT INTO kw_doc_terms (term, docno, named) VALUES (?, ?, ?)"
            " ON CONFLICT (term, docno) DO UPDATE SET named = named | excluded.named",
            [(t, docno, bits) for t, bits in named.items()],
        )
        return docno

    def _apply(
        self,
        c: sqlite3.Connection,
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
                " DO UPDATE SET df = df + excluded.df, pdf = pdf + excluded.pdf",
                pairs,
            )
            totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
            for t, _, df, pdf in pairs:
                totals[t][0] += df
                totals[t][1] += pdf
            c.executemany(
                "INSERT INTO kw_terms (term, df, pdf) VALUES (?, ?, ?) ON CONFLICT (term)"
                " DO UPDATE SET df = df + excluded.df, pdf = pdf + excluded.pdf",
                [(t, df, pdf) for t, (df, pdf) in totals.items()],
            )
            falling = [t for t, (df, pdf) in totals.items() if df < 0 or pdf < 0]
            for batch in _batches(falling):
                c.execute(f"DELETE FROM kw_terms WHERE term IN ({_marks(len(batch))}) AND df <= 0 AND pdf <= 0", batch)
            for docno in {d for _, d, df, pdf in pairs if df < 0 or pdf < 0}:
                c.execute("DELETE FROM kw_doc_terms WHERE docno = ? AND df <= 0 AND pdf <= 0 AND named = 0", (docno,))
        for docno, (chunks, length, pages, page_length) in docs.items():
            c.execute(
                "UPDATE kw_docs SET chunks = chunks + ?, length = length + ?, pages = pages + ?,"
                " page_length = page_length + ? WHERE docno = ?",
                (chunks, length, pages, page_length, docno),
            )

    def _remove_chunks(self, c: sqlite3.Connection, rows: list[tuple]) -> None:
        deltas: Counter[tuple[str, int]] = Counter()
        docs: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
        touched: set[tuple[int, int]] = set()
        for rowid, docno, page, length, tokens in rows:
            c.execute(
                "INSERT INTO kw_chunks_fts (kw_chunks_fts, rowid, tokens) VALUES ('delete', ?, ?)", (rowid, tokens)
            )
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

    def _refresh_pages(self, c: sqlite3.Connection, touched: set[tuple[int, int]]) -> None:
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
                c.execute(
                    "INSERT INTO kw_pages_fts (kw_pages_fts, rowid, tokens) VALUES ('delete', ?, ?)", (old[0], old[2])
                )
                deltas.update({(t, docno): -1 for t in set(old[2].split())})
                docs[docno][2] -= 1
                docs[docno][3] -= old[1]
            if not chunks:
                if old is not None:
                    c.execute("DELETE FROM kw_pages WHERE id = ?", (old[0],))
                continue
            if old is None:
                rowid = c.execute(
                    "INSERT INTO kw_pages (docno, page, length, tokens) VALUES (?, ?, ?, ?)",
                    (docno, page, length, joined),
                ).lastrowid
            else:
                rowid = old[0]
                c.execute("UPDATE kw_pages SET length = ?, tokens = ? WHERE id = ?", (length, joined, rowid))
            c.execute("INSERT INTO kw_pages_fts (rowid, tokens) VALUES (?, ?)", (rowid, joined))
            deltas.update({(t, docno): 1 for t in set(joined.split())})
            docs[docno][2] += 1
            docs[docno][3] += length
        pages = {key: n for key, n in deltas.items() if n}
        self._apply(c, Counter(), pages, docs)

    # ------------------------------------------------------------------ documents
    def _docnos(self, names: Sequence[str]) -> list[int]:
        return [
            int(r[0])
            for batch in _batches(list(names))
            for r in self.db.query(f"SELECT docno FROM kw_docs WHERE doc IN ({_marks(len(batch))})", batch)
        ]

    def docs(self, names: Sequence[str] | None = None) -> dict[str, int]:
        if names is None:
            return {doc: n for doc, n in self.db.query("SELECT doc, chunks FROM kw_docs ORDER BY docno")}
        return {
            doc: n
            for batch in _batches(list(names))
            for doc, n in self.db.query(f"SELECT doc, chunks FROM kw_docs WHERE doc IN ({_marks(len(batch))})", batch)
        }

    def scope(self, names: Sequence[str] | None = None) -> Scope:
        sql = "SELECT SUM(chunks), SUM(length), SUM(pages), SUM(page_length) FROM kw_docs"
        if names is None:
            row = self.db.query(sql)[0]
            return Scope(*(int(v or 0) for v in row))
        totals = [0, 0, 0, 0]
        for batch in _batches(list(names)):
            row = self.db.query(f"{sql} WHERE doc IN ({_marks(len(batch))})", batch)[0]
            totals = [a + int(v or 0) for a, v in zip(totals, row, strict=True)]
        return Scope(*totals)

    def doc_terms(self, doc: str) -> set[str]:
        rows = self.db.query(
            "SELECT t.term FROM kw_doc_terms t JOIN kw_docs d ON d.docno = t.docno"
            " WHERE d.doc = ? AND (t.df > 0 OR t.named & 1)",
            (doc,),
        )
        return {r[0] for r in rows}

    def doc_hits(self, terms: Iterable[str], names: Sequence[str] | None = None) -> list[tuple[str, str, bool, bool]]:
        wanted = sorted(set(terms))
        if not wanted:
            return []
        sql = (
            "SELECT d.doc, t.term, t.df > 0 OR t.named & 1, t.named & 2 FROM kw_doc_terms t"
            f" JOIN kw_docs d ON d.docno = t.docno WHERE t.term IN ({_marks(len(wanted))})"
        )
        if names is None:
            rows = self.db.query(sql, wanted)
        else:
            rows = [
                r
                for batch in _batches(self._docnos(names))
                for r in self.db.query(f"{sql} AND t.docno IN ({_marks(len(batch))})", [*wanted, *batch])
            ]
        return [(doc, term, bool(text), bool(named)) for doc, term, text, named in rows]

    # ------------------------------------------------------------------ terms
    def term_stats(
        self, terms: Iterable[str], names: Sequence[str] | None = None, *, docs: bool = False
    ) -> dict[str, tuple[int, int, int, int]]:
        wanted = sorted(set(terms))
        if not wanted:
            return {}
        if names is None and not docs:
            rows = self.db.query(
                f"SELECT term, df, pdf, 0, 0 FROM kw_terms WHERE term IN ({_marks(len(wanted))})", wanted
            )
            return {t: (int(df), int(pdf), 0, 0) for t, df, pdf, _, _ in rows}
        sql = (
            "SELECT term, SUM(df), SUM(pdf), SUM(df > 0 OR named & 1), SUM(named & 2 > 0) FROM kw_doc_terms"
            f" WHERE term IN ({_marks(len(wanted))})"
        )
        if names is None:
            rows = self.db.query(f"{sql} GROUP BY term", wanted)
        else:
            rows = [
                r
                for batch in _batches(self._docnos(names))
                for r in self.db.query(f"{sql} AND docno IN ({_marks(len(batch))}) GROUP BY term", [*wanted, *batch])
            ]
        out: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
        for term, *counts in rows:
            out[term] = [a + int(b or 0) for a, b in zip(out[term], counts, strict=True)]
        return {t: (df, pdf, ddf, ndf) for t, (df, pdf, ddf, ndf) in out.items() if df or pdf or ddf or ndf}

    def rows_with(
        self, term: str, names: Sequence[str] | None = None, *, pages: bool = False, limit: int | None = None
    ) -> list[Row]:
        alias = "p" if pages else "c"
        tail = f" ORDER BY {alias}.id DESC" + (f" LIMIT {int(limit)}" if limit is not None else "")
        if names is None:  # FTS5's postings, then the rows
            table = "kw_pages_fts" if pages else "kw_chunks_fts"
            sql = f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rowid DESC"
            ids = [
                r[0]
                for r in self.db.query(sql + (f" LIMIT {int(limit)}" if limit is not None else ""), [_phrase(term)])
            ]
            return sorted(self.rows(ids, pages=pages), key=lambda row: -row.id)
        # Some documents: their rows, read through the document index, that hold the token.
        found = [
            Row(*r)
            for batch in _batches(self._docnos(names))
            for r in self.db.query(
                f"{self._select(pages)} WHERE {alias}.docno IN ({_marks(len(batch))})"
                f" AND instr(' ' || {alias}.tokens || ' ', ?) > 0{tail}",
                [*batch, f" {term} "],
            )
        ]
        return sorted(found, key=lambda row: -row.id)[: limit if limit is not None else None]

    # ------------------------------------------------------------------ rows
    def _select(self, pages: bool) -> str:
        if pages:
            return "SELECT p.id, d.doc, p.length, p.tokens, p.page FROM kw_pages p JOIN kw_docs d ON d.docno = p.docno"
        return "SELECT c.id, d.doc, c.length, c.tokens, c.page FROM kw_chunks c JOIN kw_docs d ON d.docno = c.docno"

    def rows(self, ids: Iterable[int], *, pages: bool = False) -> list[Row]:
        alias = "p" if pages else "c"
        return [
            Row(*r)
            for batch in _batches(sorted(set(ids)))
            for r in self.db.query(f"{self._select(pages)} WHERE {alias}.id IN ({_marks(len(batch))})", list(batch))
        ]

    def nodes(self, ids: Iterable[int]) -> dict[int, TextNode]:
        return {
            rowid: to_node(node_id, json.loads(meta), text)
            for batch in _batches(sorted(set(ids)))
            for rowid, node_id, text, meta in self.db.query(
                f"SELECT id, node_id, text, meta FROM kw_chunks WHERE id IN ({_marks(len(batch))})", list(batch)
            )
        }

    def nodes_by_id(self, node_ids: Iterable[str]) -> dict[str, tuple[int, TextNode]]:
        return {
            node_id: (rowid, to_node(node_id, json.loads(meta), text))
            for batch in _batches(sorted(set(node_ids)))
            for rowid, node_id, text, meta in self.db.query(
                f"SELECT id, node_id, text, meta FROM kw_chunks WHERE node_id IN ({_marks(len(batch))})", list(batch)
            )
        }

    def page_chunks(self, doc: str, page: int) -> list[int]:
        rows = self.db.query(
            "SELECT c.id FROM kw_chunks c JOIN kw_docs d ON d.docno = c.docno WHERE d.doc = ? AND c.page = ? ORDER BY c.id",
            (doc, page),
        )
        return [r[0] for r in rows]

    def page_keys(self, names: Sequence[str] | None = None, limit: int | None = None) -> list[tuple[str, int]]:
        sql = "SELECT d.doc, p.page FROM kw_pages p JOIN kw_docs d ON d.docno = p.docno"
        tail = " ORDER BY p.id" + (f" LIMIT {int(limit)}" if limit is not None else "")
        if names is None:
            return [(doc, page) for doc, page in self.db.query(sql + tail)]
        return [
            (doc, page)
            for batch in _batches(self._docnos(names))
            for doc, page in self.db.query(f"{sql} WHERE p.docno IN ({_marks(len(batch))}){tail}", list(batch))
        ][: limit if limit is not None else None]
