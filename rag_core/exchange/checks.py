"""Checking a session export before anything of it is written: its format version, its
fields' types, and limits above anything Docent itself writes (so that drawing or storing it
cannot stall a page or exhaust a stack). ``parse_export`` raises a ``ConfigError`` that
names what is wrong; ``rag_core.exchange.import_session`` writes what it returns."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, StrictFloat, StrictInt, StrictStr, ValidationError

from rag_core.errors import ConfigError

FORMAT_VERSION = 1
MAX_IMPORT_BYTES = 64 * 1024 * 1024
# What an import takes at most, above anything Docent itself writes into a session: a chat of
# 5,000 questions; a question is cut at max_question_tokens (at most 131,072 tokens, ~524,000
# characters) and an answer at llm_max_new_tokens (at most 32,768); an answer cites at most
# top_k + rerank_top_n (100) passages. Past these a file was not made by Docent, and drawing it
# would stall the Chat page.
MAX_IMPORT_MESSAGES = 10_000
MAX_IMPORT_CHARS = 1_000_000  # a message's text, its rewritten question, one source's passage
MAX_IMPORT_SOURCES = 200  # per message
MAX_IMPORT_NAME = 1_000  # the session's name
MAX_IMPORT_DEPTH = 64  # levels of [ and {: Docent writes fewer than ten; a parser, a page or a dump recurses on each


class _Source(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)

    file: StrictStr | None = None
    page: StrictInt | None = None
    score: StrictFloat | StrictInt = 0.0
    text: StrictStr = ""
    sha256: StrictStr | None = None
    document_sha256: StrictStr | None = None


class _Message(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)

    role: Literal["user", "assistant"]
    content: StrictStr
    condensed_question: StrictStr | None = None
    created: StrictFloat | StrictInt = 0.0
    meta: dict[str, Any] = {}
    sources: list[_Source] = []


class _Session(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)

    name: StrictStr
    created: StrictFloat | StrictInt = 0.0
    doc_filter: list[StrictStr] | None = None


class _Export(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)

    docent_export: StrictInt
    session: _Session
    messages: list[_Message]
    documents: dict[str, dict[str, Any]] = {}
    settings: dict[str, Any] = {}


def parse_export(data: dict | bytes | str) -> _Export:
    """Validate an export; ``ConfigError`` says what is wrong with it."""
    if isinstance(data, bytes | str):
        if len(data) > MAX_IMPORT_BYTES:
            raise ConfigError(f"The file is too large for a session export ({len(data) / 1e6:.0f} MB).")
        text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
        if text.lstrip().startswith("#"):
            raise ConfigError(
                "This is a Markdown export, which is for reading; import the JSON export (sessions export --format json)."
            )
        try:
            data = json.loads(text)
        except ValueError as e:
            raise ConfigError(f"Not a Docent session export: the file is not JSON ({e}).") from None
        except RecursionError:  # the parser's own limit (about 1,000 levels), met at once
            raise ConfigError(_TOO_DEEP) from None
    if _depth_over(data, MAX_IMPORT_DEPTH):
        raise ConfigError(_TOO_DEEP)
    data = _without_nul(data)
    if not isinstance(data, dict) or "docent_export" not in data:
        raise ConfigError("Not a Docent session export: it has no 'docent_export' field.")
    version = data["docent_export"]
    if version != FORMAT_VERSION or isinstance(version, bool):
        raise ConfigError(
            f"This export has format version {version!r}; this Docent reads version {FORMAT_VERSION}"
            + (
                " (it was made by a newer Docent: update this one)."
                if isinstance(version, int) and version > 1
                else "."
            )
        )
    try:
        export = _Export.model_validate(data)
    except ValidationError as e:
        problems = [f"{'.'.join(str(x) for x in err['loc'])}: {err['msg']}" for err in e.errors()[:5]]
        more = f" (and {e.error_count() - 5} more)" if e.error_count() > 5 else ""
        raise ConfigError("Invalid session export: " + "; ".join(problems) + more) from None
    _check_limits(export)
    return export


_TOO_DEEP = (
    f"Not a Docent session export: it is nested deeper than {MAX_IMPORT_DEPTH} levels of [ and {{, which Docent "
    "never writes. Nothing was imported."
)


def _depth_over(data: Any, limit: int) -> bool:
    """Whether lists and dicts in ``data`` nest more than ``limit`` deep (no recursion: a
    value nested too deep for Python's stack is what this looks for)."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def _without_nul(value: Any) -> Any:
    """``value`` with NUL dropped from its strings, as the databases take text (``depth`` checked)."""
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, dict):
        return {_without_nul(k): _without_nul(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_nul(v) for v in value]
    return value


def _check_limits(export: _Export) -> None:
    """``ConfigError`` naming the first part of an export larger than Docent ever writes."""
    nothing = " Nothing was imported."
    if len(export.messages) > MAX_IMPORT_MESSAGES:
        raise ConfigError(
            f"This export holds {len(export.messages):,} messages; a chat can be imported with at most "
            f"{MAX_IMPORT_MESSAGES:,} (a conversation of {MAX_IMPORT_MESSAGES // 2:,} questions).{nothing}"
        )
    if len(export.session.name) > MAX_IMPORT_NAME:
        raise ConfigError(
            f"The chat's name is {len(export.session.name):,} characters long; at most {MAX_IMPORT_NAME:,}.{nothing}"
        )
    for n, m in enumerate(export.messages, 1):
        where = f"Message {n} ({'question' if m.role == 'user' else 'answer'})"
        texts = [("text", m.content), ("rewritten question", m.condensed_question or "")]
        texts += [(f"source {i}", src.text) for i, src in enumerate(m.sources, 1)]
        for what, text in texts:
            if len(text) > MAX_IMPORT_CHARS:
                raise ConfigError(
                    f"{where}: its {what} is {len(text):,} characters long; a chat can be imported with at most "
                    f"{MAX_IMPORT_CHARS:,} characters there (more than any question or answer Docent keeps).{nothing}"
                )
        if len(m.sources) > MAX_IMPORT_SOURCES:
            raise ConfigError(
                f"{where} cites {len(m.sources):,} sources; at most {MAX_IMPORT_SOURCES} can be imported.{nothing}"
            )
