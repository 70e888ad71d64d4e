"""A real PostgreSQL server for tests: Debian's binaries, ``initdb`` + ``pg_ctl`` in a
temporary folder, listening on a free loopback port with trust authentication.

PostgreSQL refuses to run as root, and tests run as root in CI: the server then runs as
``nobody`` (``runuser``), in a folder under /tmp that user may enter. When the binaries are
missing, ``postgres_missing()`` says why and the tests that need a server skip with it
(``scripts/test.sh`` installs them on Debian when it runs as root).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

BIN_DIRS = sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
RUN_AS = "nobody"


def _bin(name: str) -> str | None:
    for folder in BIN_DIRS:
        if (folder / name).is_file():
            return str(folder / name)
    return shutil.which(name)


def postgres_missing() -> str | None:
    """Why no test server can be started here (None: it can)."""
    missing = [n for n in ("initdb", "pg_ctl", "postgres") if _bin(n) is None]
    if missing:
        return f"PostgreSQL is not installed ({', '.join(missing)} not found; apt-get install postgresql)"
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "running as root without runuser: PostgreSQL cannot be started as root"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install -r requirements.txt)"
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class PgServer:
    """One cluster in its own folder; ``url()`` names a database in it."""

    folder: Path
    port: int = field(default_factory=_free_port)

    @property
    def data(self) -> Path:
        return self.folder / "pgdata"

    @property
    def log(self) -> Path:
        return self.folder / "postgres.log"

    def _run(self, *cmd: str, check: bool = True) -> subprocess.CompletedProcess:
        prefix = ["runuser", "-u", RUN_AS, "--"] if os.geteuid() == 0 else []
        env = {"PATH": os.environ.get("PATH", ""), "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "HOME": str(self.folder)}
        done = subprocess.run([*prefix, *cmd], cwd=self.folder, env=env, capture_output=True, text=True, timeout=120)
        if check and done.returncode:
            raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}): {done.stdout}{done.stderr}")
        return done

    def init(self) -> PgServer:
        self.folder.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(self.folder, RUN_AS)
            self.folder.chmod(0o755)
        initdb = _bin("initdb")
        assert initdb
        self._run(initdb, "-D", str(self.data), "-U", "docent", "--auth=trust", "-E", "UTF8", "--no-sync")
        with open(self.data / "postgresql.conf", "a", encoding="utf-8") as conf:
            conf.write(
                f"listen_addresses = '127.0.0.1'\nport = {self.port}\nunix_socket_directories = '{self.folder}'\n"
                "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\nshared_buffers = 32MB\n"
                "max_connections = 100\n"
            )
        return self

    def start(self) -> None:
        pg_ctl = _bin("pg_ctl")
        assert pg_ctl
        self._run(pg_ctl, "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", "start")

    def stop(self, mode: str = "fast") -> None:
        pg_ctl = _bin("pg_ctl")
        assert pg_ctl
        self._run(pg_ctl, "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop", check=False)

    def restart(self) -> None:
        self.stop()
        self.start()

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def url(self, database: str = "docent") -> str:
        return f"postgresql://docent@127.0.0.1:{self.port}/{database}"

    def pid(self) -> int | None:
        with contextlib.suppress(OSError, ValueError, IndexError):
            return int((self.data / "postmaster.pid").read_text().split()[0])
        return None

    def kill(self) -> None:
        """The postmaster killed outright (a crash, not a shutdown)."""
        pid = self.pid()
        if pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            time.sleep(0.5)


def start_postgres(parent: Path | None = None) -> PgServer:
    """A fresh cluster, started, with a database ``docent``; under /tmp so ``nobody`` can enter it."""
    folder = Path(tempfile.mkdtemp(prefix="docent-pg-", dir=parent))
    folder.chmod(0o755)  # mkdtemp's 0700 would keep nobody out
    server = PgServer(folder / "cluster").init()
    server.start()
    server.create_database("docent")
    return server


def remove(server: PgServer) -> None:
    server.stop("immediate")
    shutil.rmtree(server.folder.parent, ignore_errors=True)
