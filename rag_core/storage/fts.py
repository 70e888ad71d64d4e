"""The keyword index in SQLite (``index.db``): what search reads of the tables that
``rag_core.storage.fts_tables`` keeps.

FTS5 gives the postings of one term (newest first); a search restricted to some documents
reads their rows through the document index instead. FTS5's own ``bm25()`` is not used: it
scores every row that holds any query term (0.6–0.9 s for a question of common words at
100,000 chunks) and its idf differs from the one Docent's evaluation figures were made
with; ``rag_core.retrieval.keywords`` scores instead.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from llama_index.core.schema import TextNode

from rag_core.storage.fts_tables import KeywordTables, fts_phrase, in_batches, placeholders, unpack_meta
from rag_core.storage.keyword_index import KeywordIndex, Row, Scope, to_node


class SQLiteKeywordIndex(KeywordTables, KeywordIndex):
    # ------------------------------------------------------------------ documents
    def _docnos(self, names: Sequence[str]) -> list[int]:
        return [
            int(r[0])
            for batch in in_batches(list(names))
            for r in self.db.query(f"SELECT docno FROM kw_docs WHERE doc IN ({placeholders(len(batch))})", batch)
        ]

    def docs(self, names: Sequence[str] | None = None) -> dict[str, int]:
        if names is None:
            return {doc: n for doc, n in self.db.query("SELECT doc, chunks FROM kw_docs ORDER BY docno")}
        return {
            doc: n
            for batch in in_batches(list(names))
            for doc, n in self.db.query(
                f"SELECT doc, chunks FROM kw_docs WHERE doc IN ({placeholders(len(batch))})", batch
            )
        }

    def scope(self, names: Sequence[str] | None = None) -> Scope:
        sql = "SELECT SUM(chunks), SUM(length), SUM(pages), SUM(page_length) FROM kw_docs"
        if names is None:
            row = self.db.query(sql)[0]
            return Scope(*(int(v or 0) for v in row))
        totals = [0, 0, 0, 0]
        for batch in in_batches(list(names)):
            row = self.db.query(f"{sql} WHERE doc IN ({placeholders(len(batch))})", batch)[0]
            totals = [a + int(v or 0) for a, v in zip(totals, row, strict=True)]
        return Scope(*totals)

    def doc_terms(self, doc: str) -> set[str]:
        rows = self.db.query(
            "SELECT t.term FROM kw_doc_terms t JOIN kw_docs d ON d.docno = t.docno"
            " WHERE d.doc = ? AND (t.df > 0 OR (t.named & 1) <> 0)",
            (doc,),
        )
        return {r[0] for r in rows}

    def doc_hits(self, terms: Iterable[str], names: Sequence[str] | None = None) -> list[tuple[str, str, bool, bool]]:
        wanted = sorted(set(terms))
        if not wanted:
            return []
        sql = (
            "SELECT d.doc, t.term, CASE WHEN t.df > 0 OR (t.named & 1) <> 0 THEN 1 ELSE 0 END, t.named & 2"
            " FROM kw_doc_terms t"
            f" JOIN kw_docs d ON d.docno = t.docno WHERE t.term IN ({placeholders(len(wanted))})"
        )
        if names is None:
            rows = self.db.query(sql, wanted)
        else:
            rows = [
                r
                for batch in in_batches(self._docnos(names))
                for r in self.db.query(f"{sql} AND t.docno IN ({placeholders(len(batch))})", [*wanted, *batch])
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
                f"SELECT term, df, pdf, 0, 0 FROM kw_terms WHERE term IN ({placeholders(len(wanted))})", wanted
            )
            return {t: (int(df), int(pdf), 0, 0) for t, df, pdf, _, _ in rows}
        sql = (
            "SELECT term, SUM(df), SUM(pdf), SUM(CASE WHEN df > 0 OR (named & 1) <> 0 THEN 1 ELSE 0 END),"
            " SUM(CASE WHEN (named & 2) <> 0 THEN 1 ELSE 0 END) FROM kw_doc_terms"
            f" WHERE term IN ({placeholders(len(wanted))})"
        )
        if names is None:
            rows = self.db.query(f"{sql} GROUP BY term", wanted)
        else:
            rows = [
                r
                for batch in in_batches(self._docnos(names))
                for r in self.db.query(
                    f"{sql} AND docno IN ({placeholders(len(batch))}) GROUP BY term", [*wanted, *batch]
                )
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
                for r in self.db.query(sql + (f" LIMIT {int(limit)}" if limit is not None else ""), [fts_phrase(term)])
            ]
            return sorted(self.rows(ids, pages=pages), key=lambda row: -row.id)
        # Some documents: their rows, read through the document index, that hold the token.
        found = [
            Row(*r)
            for batch in in_batches(self._docnos(names))
            for r in self.db.query(
                f"{self._select(pages)} WHERE {alias}.docno IN ({placeholders(len(batch))})"
                f" AND {self._holds(alias)}{tail}",
                [*batch, self._term_arg(term)],
            )
        ]
        return sorted(found, key=lambda row: -row.id)[: limit if limit is not None else None]

    def _holds(self, alias: str) -> str:
        """The condition that a row holds the token given by ``_term_arg``."""
        return f"instr(' ' || {alias}.tokens || ' ', ?) > 0"

    def _term_arg(self, term: str) -> str:
        return f" {term} "

    # ------------------------------------------------------------------ rows
    def _select(self, pages: bool) -> str:
        if pages:
            return "SELECT p.id, d.doc, p.length, p.tokens, p.page FROM kw_pages p JOIN kw_docs d ON d.docno = p.docno"
        return "SELECT c.id, d.doc, c.length, c.tokens, c.page FROM kw_chunks c JOIN kw_docs d ON d.docno = c.docno"

    def rows(self, ids: Iterable[int], *, pages: bool = False) -> list[Row]:
        alias = "p" if pages else "c"
        return [
            Row(*r)
            for batch in in_batches(sorted(set(ids)))
            for r in self.db.query(
                f"{self._select(pages)} WHERE {alias}.id IN ({placeholders(len(batch))})", list(batch)
            )
        ]

    def nodes(self, ids: Iterable[int]) -> dict[int, TextNode]:
        return {
            rowid: to_node(node_id, unpack_meta(meta), text)
            for batch in in_batches(sorted(set(ids)))
            for rowid, node_id, text, meta in self.db.query(
                f"SELECT id, node_id, text, meta FROM kw_chunks WHERE id IN ({placeholders(len(batch))})", list(batch)
            )
        }

    def doc_nodes(self, doc: str) -> list[TextNode]:
        rows = self.db.query(
            "SELECT c.node_id, c.text, c.meta FROM kw_chunks c JOIN kw_docs d ON d.docno = c.docno"
            " WHERE d.doc = ? ORDER BY c.id",
            (doc,),
        )
        return [to_node(node_id, unpack_meta(meta), text) for node_id, text, meta in rows]

    def nodes_by_id(self, node_ids: Iterable[str]) -> dict[str, tuple[int, TextNode]]:
        return {
            node_id: (rowid, to_node(node_id, unpack_meta(meta), text))
            for batch in in_batches(sorted(set(node_ids)))
            for rowid, node_id, text, meta in self.db.query(
                f"SELECT id, node_id, text, meta FROM kw_chunks WHERE node_id IN ({placeholders(len(batch))})",
                list(batch),
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
            for batch in in_batches(self._docnos(names))
            for doc, page in self.db.query(f"{sql} WHERE p.docno IN ({placeholders(len(batch))}){tail}", list(batch))
        ][: limit if limit is not None else None]
