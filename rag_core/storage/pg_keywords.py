"""The keyword index in PostgreSQL: a team's processes share one, instead of each machine
filling its own ``index.db`` from the Chroma server.

The tables and the SQL are the laptop's (``rag_core.storage.fts_tables`` and
``rag_core.storage.fts``); only the postings differ. PostgreSQL's text-search parser
would split Docent's tokens again ("1,234.5", CJK bigrams), so the tokens are given to it
already made: each row's ``tsv`` is ``array_to_tsvector`` of its tokens (no parsing, no
stemming, no positions, like FTS5's ``detail=none``) under a GIN index, and a term is
looked up as one quoted lexeme (``'1,234.5'::tsquery``: the cast does not parse either).

Each library's index is a schema of its own (``docent_kw`` for the shared library,
``docent_kw_lib_<digest>`` for a person's), as each has its own ``index-<key>.db`` on the
laptop; its tables move forward through the numbered migrations below, recorded in the
schema, under an advisory lock so that processes starting together migrate once.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from rag_core import postgres
from rag_core.storage.fts import SQLiteKeywordIndex
from rag_core.storage.indexdb import IndexMeta
from rag_core.storage.keyword_index import Row

KEYWORDS_LOCK = 0x646F63656E74_03  # pg_advisory_xact_lock key: "docent" + 3, the keyword schemas' migrations
MAX_LEXEME_BYTES = 2046  # PostgreSQL refuses longer lexemes; such a token is never a question's word


def pk001_keywords() -> str:
    return """
        CREATE TABLE index_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE kw_docs (
            docno BIGSERIAL PRIMARY KEY,
            doc TEXT NOT NULL UNIQUE,
            chunks BIGINT NOT NULL DEFAULT 0,
            length BIGINT NOT NULL DEFAULT 0,
            pages BIGINT NOT NULL DEFAULT 0,
            page_length BIGINT NOT NULL DEFAULT 0
        );
        CREATE TABLE kw_chunks (
            id BIGSERIAL PRIMARY KEY,  -- positions are never reused
            node_id TEXT NOT NULL UNIQUE,
            ref_doc_id TEXT,
            docno BIGINT NOT NULL,
            page INTEGER,
            length INTEGER NOT NULL,
            tokens TEXT NOT NULL,
            text TEXT NOT NULL,
            meta BYTEA NOT NULL,
            tsv TSVECTOR
        );
        CREATE INDEX kw_chunks_doc ON kw_chunks (docno, page);
        CREATE INDEX kw_chunks_ref ON kw_chunks (ref_doc_id);
        CREATE INDEX kw_chunks_tsv ON kw_chunks USING GIN (tsv);
        CREATE TABLE kw_pages (
            id BIGSERIAL PRIMARY KEY,
            docno BIGINT NOT NULL,
            page INTEGER NOT NULL,
            length INTEGER NOT NULL,
            tokens TEXT NOT NULL,
            tsv TSVECTOR,
            UNIQUE (docno, page)
        );
        CREATE INDEX kw_pages_tsv ON kw_pages USING GIN (tsv);
        CREATE TABLE kw_terms (term TEXT PRIMARY KEY, df BIGINT NOT NULL, pdf BIGINT NOT NULL);
        CREATE TABLE kw_doc_terms (
            term TEXT NOT NULL,
            docno BIGINT NOT NULL,
            df BIGINT NOT NULL DEFAULT 0,
            pdf BIGINT NOT NULL DEFAULT 0,
            named INTEGER NOT NULL DEFAULT 0,  -- 1: in its file name's words, 2: in its name's stem, 3: both
            PRIMARY KEY (term, docno)
        );
        CREATE INDEX kw_doc_terms_doc ON kw_doc_terms (docno);
        """


PG_KEYWORD_MIGRATIONS = [pk001_keywords]


def schema_of(library_key: str) -> str:
    """The schema of a library's keyword index (``library_key``: '' or ``lib-<hex digest>``)."""
    return "docent_kw" + ("_" + library_key.replace("-", "_") if library_key else "")


class _Transaction:
    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Any:
        return self._conn.execute(postgres.placeholders(sql), tuple(parameters))

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]], /) -> None:
        with self._conn.cursor() as cur:
            cur.executemany(postgres.placeholders(sql), [tuple(r) for r in rows])


class PgIndexDB(IndexMeta):
    """One library's keyword schema in the team's database: ``index.db``'s interface
    (``transaction``, ``query``, ``meta``), connections from the process's pool."""

    def __init__(self, url: str, library_key: str = "") -> None:
        self.url = url
        self.schema = schema_of(library_key)
        self.location = f"{postgres.shown_url(url)} (schema {self.schema})"
        self._migrate()

    @contextmanager
    def transaction(self) -> Iterator[_Transaction]:
        with postgres.borrowed(self.url) as conn, postgres.translated(self.url), conn.transaction():
            conn.execute(f"SET LOCAL search_path TO {self.schema}")
            yield _Transaction(conn)

    def query(self, sql: str, params: Sequence[Any] = (), /) -> list[Any]:
        with postgres.borrowed(self.url) as conn, postgres.translated(self.url):
            conn.execute(f"SET LOCAL search_path TO {self.schema}")
            rows = conn.execute(postgres.placeholders(sql), tuple(params)).fetchall()
            conn.rollback()  # a read leaves no transaction open in the pool
            return list(rows)

    def applied_migrations(self) -> list[str]:
        return [r[0] for r in self.query("SELECT name FROM _migrations ORDER BY applied")]

    def close(self) -> None:
        """Nothing of its own to close: the connections are the pool's."""

    def _migrate(self) -> None:
        with postgres.borrowed(self.url) as conn, postgres.translated(self.url), conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (KEYWORDS_LOCK,))
            conn.execute(f"CREATE SCHEMA IF NOT EXISTS {self.schema}")
            conn.execute(f"SET LOCAL search_path TO {self.schema}")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied DOUBLE PRECISION NOT NULL)"
            )
            done = {r[0] for r in conn.execute("SELECT name FROM _migrations").fetchall()}
            for fn in PG_KEYWORD_MIGRATIONS:
                if fn.__name__ not in done:
                    conn.execute(fn())
                    conn.execute("INSERT INTO _migrations VALUES (%s, %s)", (fn.__name__, time.time()))


def lexemes(tokens: list[str]) -> list[str]:
    """The distinct tokens PostgreSQL can hold as lexemes."""
    return sorted({t for t in tokens if t and len(t.encode("utf-8")) <= MAX_LEXEME_BYTES})


class PostgresKeywordIndex(SQLiteKeywordIndex):
    """The keyword index over a ``PgIndexDB``: the same tables, terms and scores as the
    laptop's, the postings a GIN-indexed ``tsvector`` per row."""

    def _post(self, c: Any, table: str, rowid: int, tokens: list[str]) -> None:
        c.execute(f"UPDATE {table} SET tsv = array_to_tsvector(?::text[]) WHERE id = ?", (lexemes(tokens), rowid))

    def _unpost(self, c: Any, table: str, rowid: int, joined: str) -> None:
        """Nothing: a row's postings change and go with the row."""

    def _unpost_doc(self, c: Any, docno: int) -> None:
        """Nothing: the rows' postings go with them."""

    def _unpost_all(self, c: Any) -> None:
        """Nothing: the rows' postings go with them."""

    def _holds(self, alias: str) -> str:
        return f"{alias}.tsv @@ ?::tsquery"

    def _term_arg(self, term: str) -> str:
        return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"

    def rows_with(
        self, term: str, names: Sequence[str] | None = None, *, pages: bool = False, limit: int | None = None
    ) -> list[Row]:
        if names is not None:  # some documents: their rows, through the document index
            return super().rows_with(term, names, pages=pages, limit=limit)
        alias = "p" if pages else "c"
        tail = f" ORDER BY {alias}.id DESC" + (f" LIMIT {int(limit)}" if limit is not None else "")
        sql = f"{self._select(pages)} WHERE {self._holds(alias)}{tail}"
        return [Row(*r) for r in self.db.query(sql, [self._term_arg(term)])]
