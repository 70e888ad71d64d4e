-- docent.db as the release before issue 19 left it (main at a74d177): its migrations
-- m001-m003 applied by that release's rag_core/store.py, and a few rows of each table.
-- Made with `git show a74d177:rag_core/store.py` (tests/test_migrations.py checks it still matches).
BEGIN TRANSACTION;
CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied REAL NOT NULL);
INSERT INTO "_migrations" VALUES('m001_sessions',1780000000.0);
INSERT INTO "_migrations" VALUES('m002_documents',1780000000.0);
INSERT INTO "_migrations" VALUES('m003_summaries',1780000000.0);
CREATE TABLE documents (
            name TEXT PRIMARY KEY,
            sha256 TEXT NOT NULL,
            size INTEGER NOT NULL,
            pages INTEGER NOT NULL DEFAULT 0,
            chunks INTEGER NOT NULL DEFAULT 0,
            kind TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('pending', 'indexed')),
            added REAL NOT NULL,
            updated REAL NOT NULL
        );
INSERT INTO "documents" VALUES('2022 Q3 AAPL.pdf','aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',3400123,48,310,'pdf','indexed',1780000000.0,1780000000.0);
INSERT INTO "documents" VALUES('notes/tea.md','bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb',120,0,1,'md','pending',1780000000.0,1780000000.0);
CREATE TABLE messages (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
            content TEXT NOT NULL,
            condensed_question TEXT,
            sources TEXT,   -- JSON list of {file, page, score, text}
            meta TEXT,      -- JSON: timings, notices, error
            created REAL NOT NULL
        );
INSERT INTO "messages" VALUES(1,'a1b2c3d4e5f6','user','What were net sales?',NULL,'[]','{}',1780000001.0);
INSERT INTO "messages" VALUES(2,'a1b2c3d4e5f6','assistant','Net sales were $82,959 million [1].','What were Apple total net sales?','[{"file": "2022 Q3 AAPL.pdf", "page": 2, "score": 0.71, "text": "Total net sales 82,959"}]','{"timings": {"total_s": 2.5}}',1780000003.0);
CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            created REAL NOT NULL,
            updated REAL NOT NULL,
            doc_filter TEXT  -- JSON list of document names, NULL = all documents
        );
INSERT INTO "sessions" VALUES('a1b2c3d4e5f6','Apple filings',1780000000.0,1780000060.0,'["2022 Q3 AAPL.pdf"]');
INSERT INTO "sessions" VALUES('0f0e0d0c0b0a','Chat 2026-11-30 09:15',1780000100.0,1780000100.0,NULL);
CREATE TABLE summaries (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            upto_message_id INTEGER NOT NULL,  -- the summary stands for the messages up to this one
            text TEXT NOT NULL,
            created REAL NOT NULL
        );
INSERT INTO "summaries" VALUES(1,'a1b2c3d4e5f6',1,'Asked about net sales.',1780000005.0);
CREATE INDEX messages_session ON messages(session_id, id);
CREATE INDEX summaries_session ON summaries(session_id, id);
DELETE FROM "sqlite_sequence";
INSERT INTO "sqlite_sequence" VALUES('messages',3);
INSERT INTO "sqlite_sequence" VALUES('summaries',1);
COMMIT;
