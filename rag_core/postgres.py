"""Connections to the team's PostgreSQL server (``DOCENT_DATABASE_URL``).

Everything that talks to the server goes through here: the database the stores use
(``rag_core.storage.postgres``), the write lock and the generation (``rag_core.datadir``),
the settings saved from the page (``rag_core.settings``) and the docstore.

- One pool per URL in a process (psycopg 3 with ``psycopg_pool``), imported only when a URL
  is set: the laptop, with SQLite, never loads either.
- Each connection is checked as it leaves the pool, so after the server restarted the next
  action gets a new connection instead of the dead one: nothing needs restarting.
- A server that cannot be reached raises ``DatabaseUnavailableError`` with what to check,
  never a driver traceback; the URL is shown without its password (``shown_url``).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from rag_core.errors import DatabaseUnavailableError, DocentError

logger = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 5  # one attempt to reach the server
WAIT_TIMEOUT_S = 10.0  # the longest an action waits for a connection before it says the server is away
POOL_SIZE = 10  # connections per process at most (Streamlit serves every browser session from threads)


def is_postgres_url(url: str | None) -> bool:
    return bool(url) and str(url).split(":", 1)[0] in ("postgresql", "postgres")


def shown_url(url: str) -> str:
    """The URL without its password, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    user = f"{parts.username}@" if parts.username else ""
    return urlunsplit((parts.scheme, f"{user}{host}", parts.path, parts.query, parts.fragment))


def unavailable(url: str, e: BaseException) -> DatabaseUnavailableError:
    why = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    if url and url in why:
        why = why.replace(url, shown_url(url))
    return DatabaseUnavailableError(
        f"The database server {shown_url(url)} cannot be reached ({why}). Nothing was lost: what you did was not "
        "saved, and Docent tries the server again with your next action. Check that PostgreSQL is running and "
        "that DOCENT_DATABASE_URL names it."
    )


@contextlib.contextmanager
def translated(url: str) -> Iterator[None]:
    """Driver errors as Docent's: a lost or refused connection is ``DatabaseUnavailableError``."""
    import psycopg
    from psycopg_pool import PoolTimeout

    try:
        yield
    except (psycopg.OperationalError, PoolTimeout) as e:
        raise unavailable(url, e) from e
    except psycopg.errors.InsufficientPrivilege as e:
        raise DocentError(f"The database {shown_url(url)} refused Docent: {e}") from e


class Row(tuple):
    """A result row by position or by column name, and ``dict(row)``, as sqlite3.Row offers."""

    _names: tuple[str, ...] = ()

    def __new__(cls, values: Sequence[Any], names: tuple[str, ...]) -> Row:
        row = super().__new__(cls, values)
        row._names = names
        return row

    def keys(self) -> list[str]:
        return list(self._names)

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            try:
                return tuple.__getitem__(self, self._names.index(key))
            except ValueError:
                raise KeyError(key) from None
        return tuple.__getitem__(self, key)


def row_factory(cursor: Any) -> Any:
    names = tuple(c.name for c in cursor.description or ())
    return lambda values: Row(values, names)


_POOLS: dict[str, Any] = {}
_POOLS_LOCK = threading.Lock()


def pool(url: str) -> Any:
    """The process's pool for ``url`` (a ``psycopg_pool.ConnectionPool``), opened on first use."""
    with _POOLS_LOCK:
        found = _POOLS.get(url)
        if found is not None:
            return found
        try:
            from psycopg_pool import ConnectionPool
        except ImportError as e:  # pragma: no cover - the requirements install it
            raise DocentError(
                "DOCENT_DATABASE_URL names a PostgreSQL server, but psycopg is not installed: "
                "pip install -r requirements.txt"
            ) from e
        created = ConnectionPool(
            url,
            min_size=1,
            max_size=POOL_SIZE,
            kwargs={"connect_timeout": CONNECT_TIMEOUT_S, "row_factory": row_factory},
            check=ConnectionPool.check_connection,
            timeout=WAIT_TIMEOUT_S,
            reconnect_timeout=24 * 3600.0,  # keep trying: a server away for a while comes back
            name="docent",
            open=False,
        )
        created.open(wait=False)
        _POOLS[url] = created
        return created


@contextlib.contextmanager
def borrowed(url: str) -> Iterator[Any]:
    """A connection from the pool, given back after the block (a transaction left open is
    rolled back). A server that refuses connections is said at once, not after the longest
    wait: when none comes within a second, the server is asked directly before waiting on."""
    from psycopg_pool import PoolTimeout

    p = pool(url)
    with translated(url):
        try:
            conn = p.getconn(timeout=1.0)
        except PoolTimeout:
            connect(url).close()  # raises DatabaseUnavailableError when the server is away
            conn = p.getconn(timeout=WAIT_TIMEOUT_S)  # it is there: the pool is busy, so wait
        try:
            yield conn
        finally:
            p.putconn(conn)


def connect(url: str, *, autocommit: bool = True) -> Any:
    """A connection of its own, outside the pool: the write lock and the listener hold one."""
    import psycopg

    with translated(url):
        return psycopg.connect(url, autocommit=autocommit, connect_timeout=CONNECT_TIMEOUT_S, row_factory=row_factory)


def placeholders(sql: str) -> str:
    """The stores' ``?`` placeholders as psycopg's ``%s`` (a literal ``%`` doubled first)."""
    return sql.replace("%", "%%").replace("?", "%s")


def close_all() -> None:
    """Close every pool (tests, and a process that is done)."""
    with _POOLS_LOCK:
        for p in _POOLS.values():
            with contextlib.suppress(Exception):
                p.close(timeout=2)
        _POOLS.clear()
