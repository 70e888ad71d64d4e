"""The schema, as numbered migrations that run on SQLite and on PostgreSQL alike.

Each ``mNNN_name(dialect)`` returns the DDL of one step; the database records the names it
applied in ``_migrations`` and applies the rest in order, each in its own transaction
(simonw/llm's pattern). The names are what existing databases recorded: a migration is
never renamed or changed once released, only followed by another. Where the two databases
differ the ``Dialect`` says how (``rag_core.storage.dialect``), so a migration is written once.
"""

from __future__ import annotations

from collections.abc import Callable

from rag_core.storage.dialect import Dialect

Migration = Callable[[Dialect], str]


def m001_sessions(d: Dialect) -> str:
    return f"""
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            created {d.real} NOT NULL,
            updated {d.real} NOT NULL,
            doc_filter TEXT  -- JSON list of document names, NULL = all documents
        );
        CREATE TABLE messages (
            id {d.serial_key},
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
            content TEXT NOT NULL,
            condensed_question TEXT,
            sources TEXT,   -- JSON list of {{file, page, score, text}}
            meta TEXT,      -- JSON: timings, notices, error
            created {d.real} NOT NULL
        );
        CREATE INDEX messages_session ON messages(session_id, id);
        """


def m002_documents(d: Dialect) -> str:
    return f"""
        CREATE TABLE documents (
            name TEXT PRIMARY KEY,
            sha256 TEXT NOT NULL,
            size {d.integer} NOT NULL,
            pages {d.integer} NOT NULL DEFAULT 0,
            chunks {d.integer} NOT NULL DEFAULT 0,
            kind TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('pending', 'indexed')),
            added {d.real} NOT NULL,
            updated {d.real} NOT NULL
        );
        """


def m003_summaries(d: Dialect) -> str:
    return f"""
        CREATE TABLE summaries (
            id {d.serial_key},
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            upto_message_id {d.integer} NOT NULL,  -- the summary stands for the messages up to this one
            text TEXT NOT NULL,
            created {d.real} NOT NULL
        );
        CREATE INDEX summaries_session ON summaries(session_id, id);
        """


def m004_owners(d: Dialect) -> str:
    """Whose each conversation is ('' is the one local person, as before sign-in), and which
    library each document belongs to ('' is the shared library): a document's name is unique
    within its library, so the key becomes (library, name), a table rebuilt on SQLite."""
    json_check = (
        """
        CREATE FUNCTION docent_json(t TEXT) RETURNS JSONB LANGUAGE plpgsql IMMUTABLE AS $$
        BEGIN
            RETURN t::jsonb;
        EXCEPTION WHEN others THEN
            RETURN NULL;
        END $$;
        """
        if d.name == "postgres"
        else ""
    )
    return f"""
        ALTER TABLE sessions ADD COLUMN owner TEXT NOT NULL DEFAULT '';
        CREATE INDEX sessions_owner ON sessions(owner, updated);
        CREATE TABLE documents_v2 (
            library TEXT NOT NULL DEFAULT '',
            name TEXT NOT NULL,
            sha256 TEXT NOT NULL,
            size {d.integer} NOT NULL,
            pages {d.integer} NOT NULL DEFAULT 0,
            chunks {d.integer} NOT NULL DEFAULT 0,
            kind TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('pending', 'indexed')),
            added {d.real} NOT NULL,
            updated {d.real} NOT NULL,
            PRIMARY KEY (library, name)
        );
        INSERT INTO documents_v2 (library, name, sha256, size, pages, chunks, kind, status, added, updated)
            SELECT '', name, sha256, size, pages, chunks, kind, status, added, updated FROM documents;
        DROP TABLE documents;
        ALTER TABLE documents_v2 RENAME TO documents;
        CREATE INDEX documents_sha ON documents(sha256);
        {json_check}
        """


def m005_shared_state(d: Dialect) -> str:
    """What a team's processes share besides conversations and the registry, in the database
    when it is PostgreSQL: the settings saved from the page (on SQLite they stay in
    settings.json) and the generation that tells every process another one wrote."""
    return f"""
        CREATE TABLE saved_settings (
            id {d.integer} PRIMARY KEY CHECK (id = 1),
            data TEXT NOT NULL,  -- JSON object of the saved fields, flat by name (never a key)
            updated {d.real} NOT NULL
        );
        CREATE TABLE generation (
            id {d.integer} PRIMARY KEY CHECK (id = 1),
            token TEXT NOT NULL,
            updated {d.real} NOT NULL
        );
        """


def m006_kvstore(d: Dialect) -> str:
    """LlamaIndex's key-value collections (the ingestion docstore) as rows, one per key."""
    return """
        CREATE TABLE kvstore (
            collection TEXT NOT NULL,
            key TEXT NOT NULL,
            value TEXT NOT NULL,  -- JSON
            PRIMARY KEY (collection, key)
        );
        """


def m007_session_claims(d: Dialect) -> str:
    """Who is answering in a session, so that a session answers one question at a time
    across tabs and processes, a team's app processes on one PostgreSQL included
    (``rag_core.storage.claims``)."""
    return f"""
        CREATE TABLE session_claims (
            session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
            token TEXT NOT NULL,      -- the turn holding it (random)
            host TEXT NOT NULL,       -- its machine and process: a holder that died is seen at once
            pid {d.integer} NOT NULL,
            question TEXT NOT NULL,   -- what it answers, told to whoever waits
            claimed {d.real} NOT NULL,
            expires {d.real} NOT NULL -- renewed while it answers; past it, anyone may take over
        );
        """


def m008_document_entities(d: Dialect) -> str:
    """What each document is about (``rag_core.entities``): read from its chunks once, kept
    beside its registry row and dropped with it. ``sha256`` is the version of the document it
    was read from and ``reader`` the version of the reading: either differing, it is read again."""
    return f"""
        CREATE TABLE document_entities (
            library TEXT NOT NULL DEFAULT '',
            name TEXT NOT NULL,
            sha256 TEXT NOT NULL,
            reader {d.integer} NOT NULL,
            data TEXT NOT NULL,  -- JSON: subjects, the names it uses, its parts
            PRIMARY KEY (library, name)
        );
        """


def m009_jobs(d: Dialect) -> str:
    """Background uploads' progress (``rag_core.jobs``), so that every app process shows a
    person's running uploads and can stop them, whichever process runs them; a job whose
    process is gone is seen as such (its host and pid, and when it last wrote)."""
    return f"""
        CREATE TABLE jobs (
            id TEXT PRIMARY KEY,
            owner TEXT NOT NULL DEFAULT '',  -- who started it ('' without sign-in)
            state TEXT NOT NULL,             -- running | done | cancelled | failed
            files TEXT NOT NULL,             -- JSON: each file's state, message, fraction, result
            error TEXT NOT NULL DEFAULT '',
            host TEXT NOT NULL,              -- the process running it
            pid {d.integer} NOT NULL,
            created {d.real} NOT NULL,
            updated {d.real} NOT NULL,       -- written while it runs: a job silent for long is lost
            finished {d.real},
            cancel {d.integer} NOT NULL DEFAULT 0  -- asked to stop, from any process
        );
        CREATE INDEX jobs_owner ON jobs (owner, state);
        """


def m010_pending_questions(d: Dialect) -> str:
    """Questions typed but not yet in their conversation (``rag_core.storage.pending``): kept
    the moment they are typed, before the question waits for another answer or is drawn, so
    a reload, a closed tab or a failure never drops what someone typed."""
    return f"""
        CREATE TABLE pending_questions (
            id TEXT PRIMARY KEY,
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            question TEXT NOT NULL,
            created {d.real} NOT NULL
        );
        CREATE INDEX pending_questions_session ON pending_questions(session_id, created);
        """


def m011_pending_asking(d: Dialect) -> str:
    """Until when a kept question is being asked by the run that kept it (renewed while it
    waits behind another answer): other tabs show it only once nobody is asking it."""
    return f"ALTER TABLE pending_questions ADD COLUMN asking_until {d.real} NOT NULL DEFAULT 0;"


MIGRATIONS: list[Migration] = [
    m001_sessions,
    m002_documents,
    m003_summaries,
    m004_owners,
    m005_shared_state,
    m006_kvstore,
    m007_session_claims,
    m008_document_entities,
    m009_jobs,
    m010_pending_questions,
    m011_pending_asking,
]
