"""Where settings come from: pydantic-settings sources, from the lowest to the highest.

1. The defaults in code.
2. ``<data_dir>/settings.json``, what the Settings page saved (``SavedSettings``).
3. ``DOCENT_<FIELD>`` environment variables (``Environment``).
4. Values given explicitly: the keys typed in the app, ``--data-dir``, ``eval --set``.

The file and the variables name every setting flat (``top_k``, ``DOCENT_TOP_K``), the
fields of a nested group included: groups are how settings are passed down, not how they
are spelled (``nest`` turns flat names into the tree).

A saved value that is not valid (``"top_k": 0``, ``"chunk_size": "abc"``) is left out, so
that its default applies, and is kept in ``SavedSettings.report``: a hand-edited or
outdated file must not lock the user out of the page that fixes it. An invalid variable
or explicit value stays an error that names it: it was set on purpose, and the app cannot
change it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, EnvSettingsSource, PydanticBaseSettingsSource
from pydantic_settings.sources.utils import parse_env_vars

from rag_core.errors import ConfigError

# The provider keys are also read under the names their own tools use.
PLAIN_KEY_VARIABLES = {"openai_api_key": "OPENAI_API_KEY", "cohere_api_key": "COHERE_API_KEY"}


# ============================================================================ the tree, flat
def groups(settings_cls: type[BaseModel]) -> dict[str, type[BaseModel]]:
    """The nested groups of a settings tree, by their field name."""
    out: dict[str, type[BaseModel]] = {}
    for name, info in settings_cls.model_fields.items():
        kind = info.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            out[name] = kind
    return out


def leaf_fields(settings_cls: type[BaseModel]) -> dict[str, FieldInfo]:
    """Every setting by its flat name, groups flattened, in declaration order."""
    nested = groups(settings_cls)
    out: dict[str, FieldInfo] = {}
    for name, info in settings_cls.model_fields.items():
        if name in nested:
            out.update(nested[name].model_fields)
        else:
            out[name] = info
    return out


def nest(settings_cls: type[BaseModel], flat: Mapping[str, Any]) -> dict[str, Any]:
    """Flat values as the tree takes them: ``{"top_k": 3}`` → ``{"retrieval": {"top_k": 3}}``."""
    nested = groups(settings_cls)
    where = {name: group for group, model in nested.items() for name in model.model_fields}
    out: dict[str, Any] = {}
    for name, value in flat.items():
        if name in where:
            out.setdefault(where[name], {})[name] = value
        elif name in nested and isinstance(value, Mapping):
            out.setdefault(name, {}).update(value)
        else:
            out[name] = value
    return out


_ADAPTERS: dict[int, TypeAdapter] = {}


def value_problem(info: FieldInfo, value: Any) -> str | None:
    """Why ``value`` cannot be this field's (its type and limits), or None when it can."""
    adapter = _ADAPTERS.get(id(info))
    if adapter is None:
        kind: Any = Annotated[info.annotation, info]  # the field's type with its limits, built at run time
        adapter = _ADAPTERS[id(info)] = TypeAdapter(kind)
    try:
        adapter.validate_python(value)
    except ValidationError as e:
        text = "; ".join(err["msg"] for err in e.errors())
        return text[:1].lower() + text[1:]
    return None


# ============================================================================ settings.json
@dataclass(frozen=True)
class Rejected:
    """A saved value that is not used: the field, the value as saved, and why."""

    field: str
    value: Any
    reason: str


@dataclass
class SavedReport:
    """What was wrong with ``settings.json``: values left out, or the whole file unreadable."""

    path: Path
    rejected: list[Rejected] = field(default_factory=list)
    unreadable: str | None = None  # why the file could not be read as a JSON object

    def __bool__(self) -> bool:
        return bool(self.rejected or self.unreadable)

    @property
    def fields(self) -> dict[str, Rejected]:
        return {r.field: r for r in self.rejected}


def read_saved(path: Path) -> tuple[dict[str, Any], str | None]:
    """The saved values, and why the file could not be read (None when it could, or is absent)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}, None
    except (OSError, ValueError) as e:
        return {}, str(e)
    if not isinstance(data, dict):
        return {}, f"it holds a JSON {type(data).__name__}, not an object of settings"
    return data, None


class SavedSettings(PydanticBaseSettingsSource):
    """``settings.json``, flat by field name. Invalid values are left out and reported;
    fields in ``skip`` (set by a variable) do not count, and neither does ``data_dir``
    (the file lives in it)."""

    def __init__(
        self, settings_cls: type[BaseSettings], path: Path, skip: Collection[str] = (), database: str | None = None
    ) -> None:
        super().__init__(settings_cls)
        self.path = Path(path)
        self.database = database  # PostgreSQL: the saved settings are its row, not the file (``stored``)
        self.skip = {*skip, "data_dir", "database_url", "library"}
        self.report = SavedReport(Path("the database's saved_settings") if database else self.path)

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # __call__ reads the file once, for every field

    def __call__(self) -> dict[str, Any]:
        if self.database:
            from rag_core.settings import stored

            saved, self.report.unreadable = stored.read(self.database)
        else:
            saved, self.report.unreadable = read_saved(self.path)
        fields = leaf_fields(self.settings_cls)
        accepted: dict[str, Any] = {}
        self.report.rejected = []
        for name, value in saved.items():
            if name not in fields or name in self.skip:
                continue
            problem = value_problem(fields[name], value)
            if problem:
                self.report.rejected.append(Rejected(name, value, problem))
            else:
                accepted[name] = value
        return nest(self.settings_cls, accepted)


# ============================================================================ DOCENT_* variables
class Environment(EnvSettingsSource):
    """``DOCENT_<FIELD>`` variables from ``environ`` (``os.environ`` when None), a group's
    fields by their flat name (``DOCENT_TOP_K``); a provider key also from its tool's own
    variable (``OPENAI_API_KEY``) when Docent's is unset."""

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str] | None = None) -> None:
        self.environ = os.environ if environ is None else environ
        self.groups = groups(settings_cls)
        super().__init__(settings_cls)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        return parse_env_vars(self.environ, self.case_sensitive, self.env_ignore_empty, self.env_parse_none_str)

    def variable(self, name: str) -> str:
        """The variable that sets the field ``name``."""
        return f"{self.env_prefix}{name}".upper()

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        group = self.groups.get(field_name)
        if group is not None:
            found = {n: v for n in group.model_fields if (v := self.lookup(n)) is not None}
            return (found or None), field_name, False
        value, key, is_complex = super().get_field_value(field, field_name)
        if value is None and field_name in PLAIN_KEY_VARIABLES:
            value = self.env_vars.get(self._apply_case_sensitive(PLAIN_KEY_VARIABLES[field_name])) or None
        return value, key, is_complex

    def prepare_field_value(self, field_name: str, field: FieldInfo, value: Any, value_is_complex: bool) -> Any:
        if field_name in self.groups:
            return value  # already the group's fields, each as its variable says
        return super().prepare_field_value(field_name, field, value, value_is_complex)

    def lookup(self, name: str) -> str | None:
        """The raw value of the variable that sets the field ``name`` (None when it is unset)."""
        return self.env_vars.get(self._apply_case_sensitive(f"{self.env_prefix}{name}"))

    def pinned(self) -> set[str]:
        """The fields a ``DOCENT_*`` variable sets (the provider keys' own variables aside)."""
        return {name for name in leaf_fields(self.settings_cls) if self.lookup(name) is not None}


def data_dir_of(env: Environment, given: Mapping[str, Any], default: Path) -> Path:
    """The data folder: the one ``given``, else the variable's, else ``default``. A variable set
    but empty names no folder: an error that says the fix, never ``default`` in silence."""
    variable = env.lookup("data_dir")
    if not given.get("data_dir") and variable is not None and not variable.strip():
        raise ConfigError(
            f"{env.variable('data_dir')} is set but empty, so Docent cannot tell which folder holds your data. "
            f"Set it to that folder, or unset it to use the default {default}."
        )
    return Path(given.get("data_dir") or variable or default)
