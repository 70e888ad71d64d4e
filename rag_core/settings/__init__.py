"""One settings tree for Docent, loaded with pydantic-settings.

Defaults live in code (``tree``); the Settings page saves what the user changed to
``<data_dir>/settings.json`` (never the keys); ``DOCENT_*`` environment variables override
both, and values given explicitly override everything (``sources`` has the order). Settings
are passed down: nothing in rag_core reads a global, and LlamaIndex's own global
``Settings`` is never used.

A saved value that cannot be used does not stop Docent: it runs with that field's default,
and ``saved_notice`` says which file and which fields, for the app and the CLI to show.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic.fields import FieldInfo

from rag_core.errors import ConfigError
from rag_core.files import atomic_write
from rag_core.settings import sources
from rag_core.settings.sources import Environment, Rejected, SavedReport, read_saved, value_problem
from rag_core.settings.tree import (
    FIELD_GROUPS,
    GROUPS,
    NOT_ON_FORM,
    SECRET_FIELDS,
    DocentSettings,
    RetrievalSettings,
)

__all__ = [
    "FIELD_GROUPS",
    "GROUPS",
    "NOT_ON_FORM",
    "SECRET_FIELDS",
    "DocentSettings",
    "Rejected",
    "RetrievalSettings",
    "SavedReport",
    "check_values",
    "env_pinned_fields",
    "form_fields",
    "leaf_fields",
    "load_settings",
    "nest",
    "save_settings",
    "saved_notice",
]


def leaf_fields() -> dict[str, FieldInfo]:
    """Every setting by its flat name, groups flattened, in declaration order."""
    return sources.leaf_fields(DocentSettings)


def form_fields() -> list[str]:
    """The settings the Settings page edits: every field not marked ``NOT_ON_FORM``."""
    return [name for name, info in leaf_fields().items() if info.json_schema_extra != NOT_ON_FORM]


def nest(flat: Mapping[str, Any]) -> dict[str, Any]:
    """Flat field values as the tree takes them: ``{"top_k": 3}`` → ``{"retrieval": {"top_k": 3}}``."""
    return sources.nest(DocentSettings, flat)


def env_pinned_fields(environ: Mapping[str, str] | None = None) -> set[str]:
    """Fields set by ``DOCENT_*`` variables: the Settings page shows them read-only."""
    return Environment(DocentSettings, environ).pinned()


def load_settings(environ: Mapping[str, str] | None = None, **given: Any) -> DocentSettings:
    """Defaults, then ``<data_dir>/settings.json``, then the environment, then ``given`` (all
    by flat field name). Reads the ``environ`` mapping it is given (``os.environ`` by
    default), so tests pass a plain dict.

    Saved values that cannot be used are left out (their defaults apply) and reported in
    ``settings.saved_report``; an invalid variable or given value raises ``ConfigError``."""
    layers = DocentSettings.layers(environ, given)
    try:
        settings = DocentSettings(_build_sources=(layers, {}))
    except ValidationError as e:
        raise ConfigError(_describe(e, layers[1], given)) from None
    settings._saved_report = layers[2].report
    return settings


def check_values(values: Mapping[str, Any]) -> dict[str, str]:
    """Why each of these flat values cannot be saved (empty when all can): the same check
    that ``settings.json`` goes through, for the Settings page to run before it saves."""
    fields = leaf_fields()
    problems = {}
    for name, value in values.items():
        if name in fields and (problem := value_problem(fields[name], value)):
            problems[name] = f"{name} = {_shown(name, value)}: {problem}"
    return problems


def saved_notice(settings: DocentSettings) -> str | None:
    """What the user should know about ``settings.json`` (None when all of it was used)."""
    report = settings.saved_report
    if report is None:
        return None
    if report.unreadable:
        return (
            f"The saved settings {report.path} cannot be read ({report.unreadable}), so Docent runs with the "
            "defaults. Saving on the Settings page writes a new file (the unreadable one is kept beside it)."
        )
    wrong = "; ".join(
        f"{r.field} = {_shown(r.field, r.value)} ({r.reason}; the default {_shown(r.field, settings.value(r.field))} "
        "is used)"
        for r in report.rejected
    )
    return (
        f"The saved settings {report.path} hold values Docent cannot use: {wrong}. "
        "Fix them on the Settings page, where they are flagged (saving rewrites the file), or in the file."
    )


def save_settings(settings: DocentSettings, environ: Mapping[str, str] | None = None) -> Path:
    """Persist the non-secret fields to ``<data_dir>/settings.json`` (atomically).

    Fields pinned by a ``DOCENT_*`` variable keep what the file had (or nothing): the
    variable's value must not outlive the variable. A file that cannot be read is moved
    aside first, never overwritten: it may hold what the user meant to keep."""
    path = settings.paths.settings_file
    pinned = env_pinned_fields(environ)
    data = {k: v for k, v in settings.saved_fields().items() if k not in pinned}
    if settings.database:  # PostgreSQL: the row every process of the team reads
        from rag_core.settings import stored

        previous, _ = stored.read(settings.database)
        data.update({k: v for k, v in previous.items() if k in pinned})
        stored.write(settings.database, data)
        return path
    previous, unreadable = read_saved(path)
    if unreadable:
        os.replace(path, path.with_name(f"{path.name}.unreadable-{time.strftime('%Y%m%d-%H%M%S')}"))
    data.update({k: v for k, v in previous.items() if k in pinned})
    atomic_write(path, json.dumps(data, indent=2, sort_keys=True))
    return path


def _shown(name: str, value: Any) -> str:
    return "(hidden)" if name in SECRET_FIELDS else repr(value)


def _describe(e: ValidationError, env: Environment, given: Mapping[str, Any]) -> str:
    """Each invalid field, and where its value came from: a variable is named only when it is set."""
    pinned = env.pinned()
    parts = []
    for err in e.errors():
        loc = [str(x) for x in err.get("loc", ())]
        name = loc[-1] if loc and loc[0] in GROUPS else ".".join(loc)
        if name in given:
            where = " (given)"
        elif name in pinned:
            where = f" (env {env.variable(name)})"
        elif name in sources.PLAIN_KEY_VARIABLES:
            where = f" (env {sources.PLAIN_KEY_VARIABLES[name]})"
        else:
            where = ""
        parts.append(f"{name}{where}: {err.get('msg')}")
    return "Invalid settings: " + "; ".join(parts)
