"""Where SQLite and PostgreSQL spell things differently: the one place that knows.

The stores write portable SQL with ``?`` placeholders (``INSERT ... ON CONFLICT ... DO
UPDATE`` and ``RETURNING`` run on both); the migrations ask a ``Dialect`` for the few column
types that differ, and the one query that reads JSON inside a column asks it for that.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Dialect:
    name: str  # "sqlite" | "postgres"
    serial_key: str  # an integer primary key the database numbers itself
    integer: str  # a 64-bit integer (PostgreSQL's INTEGER is 32 bits: files of 2 GB and more)
    real: str  # a double: times are seconds since 1970 (PostgreSQL's REAL has 24 bits: minutes off)

    def cites(self, column: str) -> tuple[str, str]:
        """A FROM-clause source over the sources in a JSON ``column``, and the expression of the
        ``file`` each names; a value that is not a JSON list cites nothing."""
        if self.name == "postgres":
            safe = f"docent_json({column})"  # NULL where the text is not JSON (migration m004)
            return (
                f"jsonb_array_elements(CASE WHEN jsonb_typeof({safe}) = 'array' THEN {safe} ELSE '[]'::jsonb END)"
                " AS cited(value)",
                "cited.value ->> 'file'",
            )
        return (
            f"json_each(CASE WHEN json_valid({column}) AND json_type({column}) = 'array' THEN {column} ELSE '[]' END)"
            " AS cited",
            "json_extract(cited.value, '$.file')",
        )


SQLITE = Dialect("sqlite", "INTEGER PRIMARY KEY AUTOINCREMENT", "INTEGER", "REAL")
POSTGRES = Dialect("postgres", "BIGSERIAL PRIMARY KEY", "BIGINT", "DOUBLE PRECISION")
