"""How a command starts: the settings from the command line and the environment, and the
context over them, with what start-up had to say (never only in a log).

A saved setting that cannot be used does not stop a command: it runs with that field's
default and says so on stderr, like the app's notice (``rag_core.settings.saved_notice``).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_core.context import AppContext, build_context
from rag_core.errors import ConfigError, DiskFullError
from rag_core.settings import DocentSettings, load_settings, saved_notice
from rag_core.storage import Database, DocumentRegistry, SessionStore, SQLiteDatabase
from rag_core.storage.postgres import PostgresDatabase


def settings_for(args: argparse.Namespace, *, announce: bool = True, **given: Any) -> DocentSettings:
    """The settings for this command: ``--data-dir`` and ``given`` over the environment and
    ``settings.json``. With ``announce``, a notice about unusable saved values goes to stderr."""
    folder = getattr(args, "data_dir", None)
    if folder is not None and not folder.strip():
        raise ConfigError("--data-dir is empty: give the folder that holds your data, or leave the option out.")
    if folder:
        given["data_dir"] = Path(folder)
    settings = load_settings(**given)
    notice = saved_notice(settings)
    if announce and notice:
        print(f"notice: {notice}", file=sys.stderr)
    return settings


def context(args: argparse.Namespace, recover: bool = True) -> AppContext:
    """The context for this command; what start-up had to repair is printed to stderr."""
    ctx = build_context(settings_for(args, announce=False), recover=recover)
    for notice in ctx.notices:  # the saved settings' notice among them
        print(f"notice: {notice}", file=sys.stderr)
    return ctx


@dataclass
class Stores:
    """The database's stores alone: what a listing or an export reads."""

    settings: DocentSettings
    sessions: SessionStore
    registry: DocumentRegistry


def stores(args: argparse.Namespace) -> AppContext | Stores:
    """The context, or, on a disk too full to open the index (Chroma writes as it opens), the
    database alone, read as it is (``SQLiteDatabase`` on a full disk), with a notice saying so:
    listing documents and chats and exporting a chat need nothing else."""
    try:
        return context(args)
    except DiskFullError as full:
        settings = settings_for(args, announce=False)
        db: Database = (
            PostgresDatabase(settings.database) if settings.database else SQLiteDatabase(settings.paths.database)
        )
        print(
            f"notice: {full.short}, too full to open the index: this is what the database holds. "
            "Free some space for everything else.",
            file=sys.stderr,
        )
        return Stores(settings, SessionStore(db), DocumentRegistry(db, settings.library))
