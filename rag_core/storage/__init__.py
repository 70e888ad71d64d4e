"""What Docent keeps in its database: conversations and the document registry.

database.py    the interface the stores are written against (a transaction, a query)
sqlite.py      the SQLite backend: one file, numbered migrations, a connection per thread
backups.py     online backups of that file, and a damaged file moved aside and rebuilt
sessions.py    sessions, their messages with sources, and summaries of long ones
claims.py      who is answering in a session: one question at a time, across processes
jobs.py        background uploads' progress, seen and stopped from every process
documents.py   which documents are indexed (the registry)
"""

from rag_core.storage.backups import Backups, open_database
from rag_core.storage.claims import Busy, Claim, SessionBusyError
from rag_core.storage.database import Database
from rag_core.storage.documents import DocumentRecord, DocumentRegistry
from rag_core.storage.sessions import Message, Session, SessionStore, Summary
from rag_core.storage.sqlite import MIGRATIONS, SQLiteDatabase

__all__ = [
    "MIGRATIONS",
    "Backups",
    "Busy",
    "Claim",
    "Database",
    "DocumentRecord",
    "DocumentRegistry",
    "Message",
    "SQLiteDatabase",
    "Session",
    "SessionBusyError",
    "SessionStore",
    "Summary",
    "open_database",
]
