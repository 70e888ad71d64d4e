"""Background uploads' progress in the database (migration m009), shared by every process
that opens it: a person's upload running in one app process is seen, and can be stopped,
from another (a team's processes behind one proxy, or a second tab that reached another).

Rows are plain dicts here; ``rag_core.jobs`` turns them into its views. A job is written
when it starts, at most every ``WRITE_EVERY_S`` while it runs, and when it ends; a running
job whose process is gone (the same machine: its pid no longer runs; another machine: no
write for ``LOST_AFTER_S``) is reported as lost, never deleted: the files it finished are
indexed and say so.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from rag_core.storage.claims import HOST, pid_alive
from rag_core.storage.database import Database

WRITE_EVERY_S = 0.5  # progress written at most this often per job
LOST_AFTER_S = 120.0  # a running job of another machine not written for this long is lost
KEEP_FINISHED = 100  # finished jobs kept per person for pages that never came back for them

_COLUMNS = "id, owner, state, files, error, host, pid, created, updated, finished, cancel"


class JobStore:
    """The ``jobs`` table of one database."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def save(self, job: dict[str, Any]) -> None:
        """Write a job as this process runs it (``id``, ``owner``, ``state``, ``files``,
        ``error``, ``created``, ``finished``); a cancel asked meanwhile is kept."""
        now = time.time()
        with self.db.connect() as c:
            c.execute(
                f"INSERT INTO jobs ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)"
                " ON CONFLICT (id) DO UPDATE SET state = excluded.state, files = excluded.files,"
                " error = excluded.error, updated = excluded.updated, finished = excluded.finished",
                (
                    job["id"],
                    job.get("owner", ""),
                    job["state"],
                    json.dumps(job["files"]),
                    job.get("error", ""),
                    HOST,
                    os.getpid(),
                    job["created"],
                    now,
                    job.get("finished"),
                ),
            )
            if job["state"] != "running":
                self._prune(c, job.get("owner", ""))

    def load(self, job_id: str) -> dict[str, Any] | None:
        rows = self.db.query(f"SELECT {_COLUMNS} FROM jobs WHERE id = ?", (job_id,))
        return _read(rows[0]) if rows else None

    def running(self, owner: str) -> list[dict[str, Any]]:
        """``owner``'s jobs that run, in any process, oldest first (the lost ones too: their
        state says so)."""
        rows = self.db.query(
            f"SELECT {_COLUMNS} FROM jobs WHERE owner = ? AND state = 'running' ORDER BY created", (owner,)
        )
        return [_read(r) for r in rows]

    def ask_cancel(self, job_id: str) -> None:
        with self.db.connect() as c:
            c.execute("UPDATE jobs SET cancel = 1 WHERE id = ? AND state = 'running'", (job_id,))

    def cancel_asked(self, job_id: str, touch: bool = False) -> bool:
        """Whether someone asked the job to stop; ``touch``: and say it still runs."""
        if touch:
            with self.db.connect() as c:
                c.execute("UPDATE jobs SET updated = ? WHERE id = ?", (time.time(), job_id))
        rows = self.db.query("SELECT cancel FROM jobs WHERE id = ?", (job_id,))
        return bool(rows and rows[0]["cancel"])

    def forget(self, job_id: str) -> None:
        """Drop a job that ended (its results were read) or was lost (its process is gone: the
        row is only its progress, the files it finished are in the registry); a running one is kept."""
        job = self.load(job_id)
        if job is None or (job["state"] == "running" and not job["lost"]):
            return
        with self.db.connect() as c:
            c.execute("DELETE FROM jobs WHERE id = ? AND updated = ?", (job_id, job["updated"]))

    def _prune(self, c: Any, owner: str) -> None:
        c.execute(
            "DELETE FROM jobs WHERE owner = ? AND state <> 'running' AND id NOT IN"
            " (SELECT id FROM jobs WHERE owner = ? AND state <> 'running' ORDER BY finished DESC LIMIT ?)",
            (owner, owner, KEEP_FINISHED),
        )


def _read(row: Any) -> dict[str, Any]:
    job = {key: row[key] for key in _COLUMNS.split(", ")}
    job["files"] = json.loads(job["files"])
    job["cancel"] = bool(job["cancel"])
    job["lost"] = job["state"] == "running" and _gone(job)
    return job


def _gone(job: dict[str, Any]) -> bool:
    """Whether the process that runs a job is gone: on this machine its pid no longer runs;
    elsewhere it has not written for ``LOST_AFTER_S``."""
    if job["host"] == HOST and job["pid"] != os.getpid():
        return not pid_alive(int(job["pid"]))
    if job["host"] == HOST:
        return False  # this process: the runner knows its own jobs
    return time.time() - float(job["updated"]) > LOST_AFTER_S
