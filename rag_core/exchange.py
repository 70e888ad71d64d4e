"""Export a session to one file and import it into another Docent.

The export is JSON (``export_session``), versioned, and self-contained::

    {
      "docent_export": 1,                   # the format version; import refuses others
      "exported": "2025-01-31T12:00:00+00:00",
      "session": {"id", "name", "created", "updated", "doc_filter": [names] | null},
      "messages": [
        {"role": "user" | "assistant", "content", "condensed_question": str | null,
         "created": float, "meta": {...},
         "sources": [{"file", "page", "score", "text", ...every other key the source had,
                      "sha256": sha256 of "text", "document_sha256": the document's sha256 | null}]}
      ],
      "documents": {"name": {"sha256", "kind", "pages", "size"}},   # every cited document
      "settings": {...}                     # settings.saved_fields(): never a key
    }

No key reaches an export: the settings are the ones Docent saves (``saved_fields``), and
every string in the file is scrubbed of the configured keys' values (a key pasted into a
question included). ``export_markdown`` is the same conversation for reading.

``import_session`` validates the whole file first (a ``ConfigError`` names what is wrong:
not JSON, another version, a field of the wrong type) and then writes the session and all
its messages in one transaction: a bad file imports nothing. Its report says which cited
documents are not indexed here (``missing``) and which are indexed with other content
(``changed``: the registry's sha256 differs from the export's).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, StrictFloat, StrictInt, StrictStr, ValidationError

from rag_core.errors import ConfigError
from rag_core.payloads import Source
from rag_core.settings import DocentSettings
from rag_core.storage import DocumentRegistry, Message, SessionStore


class ExchangeContext(Protocol):
    """What an export and an import use of ``rag_core.context.AppContext``: the sessions, the
    registry (to name cited documents missing or changed) and the settings (saved, keys scrubbed)."""

    @property
    def settings(self) -> DocentSettings: ...

    @property
    def sessions(self) -> SessionStore: ...

    @property
    def registry(self) -> DocumentRegistry: ...


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


@dataclass
class ImportReport:
    """What ``import_session`` did; ``as_json`` is ``sessions import --json``'s contract."""

    session_id: str
    name: str
    messages: int
    missing: list[str] = field(default_factory=list)  # cited, not indexed here
    changed: list[str] = field(default_factory=list)  # indexed here with other content
    cited: list[str] = field(default_factory=list)  # every document the answers cite

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


# ============================================================================ export
def export_session(ctx: ExchangeContext, session_id: str) -> dict[str, Any]:
    """The session ``session_id`` as a JSON-able dict (format in the module docstring)."""
    session = ctx.sessions.get(session_id)
    documents: dict[str, dict[str, Any]] = {}
    messages = []
    for m in ctx.sessions.messages(session_id):
        sources = []
        for s in m.sources:
            name = s.get("file")
            if name and name not in documents:
                rec = ctx.registry.get(name)
                documents[name] = (
                    {"sha256": rec.sha256, "kind": rec.kind, "pages": rec.pages, "size": rec.size}
                    if rec is not None and rec.status == "indexed"
                    else {"sha256": None}
                )
            text = s.get("text") or ""
            sources.append(
                {
                    **s,
                    "sha256": s.get("sha256") or hashlib.sha256(text.encode("utf-8")).hexdigest(),
                    "document_sha256": documents[name]["sha256"] if name else None,
                }
            )
        messages.append(
            {
                "role": m.role,
                "content": m.content,
                "condensed_question": m.condensed_question,
                "created": m.created,
                "meta": m.meta,
                "sources": sources,
            }
        )
    data = {
        "docent_export": FORMAT_VERSION,
        "exported": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "session": {
            "id": session.id,
            "name": session.name,
            "created": session.created,
            "updated": session.updated,
            "doc_filter": session.doc_filter,
        },
        "messages": messages,
        "documents": documents,
        "settings": _settings(ctx),
    }
    return _scrub(data, _secrets(ctx))


def export_json(ctx: ExchangeContext, session_id: str) -> str:
    """The export as the text of a ``.json`` file."""
    return json.dumps(export_session(ctx, session_id), ensure_ascii=False, indent=2) + "\n"


def export_markdown(ctx: ExchangeContext, session_id: str) -> str:
    """The conversation for reading: questions, answers, what was searched, the sources with
    their passages (in fences, so document text never becomes markup)."""
    data = export_session(ctx, session_id)
    s = data["settings"]
    out = [
        f"# {_inline(data['session']['name'])}",
        "",
        f"Exported from Docent on {data['exported']}. LLM: {s.get('llm_provider')}"
        + (f" ({s.get('openai_model')})" if s.get("llm_provider") == "openai" else "")
        + f"; embedding: {s.get('embed_provider')}; top-k: {s.get('top_k')}.",
        "",
    ]
    for m in data["messages"]:
        if m["role"] == "user":
            out += ["## Question", "", _inline(m["content"]), ""]
            continue
        out += ["### Answer", "", _inline(m["content"]), ""]
        if m.get("condensed_question"):
            out += [f"*Searched:* {_inline(m['condensed_question'])}", ""]
        for i, src in enumerate(m["sources"], 1):
            where = _inline(src.get("file") or "?") + (f", page {src['page']}" if src.get("page") else "")
            if src.get("heading"):
                where += f" — {_inline(src['heading'])}"
            out += [
                f"**[{i}]** {where} (score {float(src.get('score') or 0):.2f})",
                "",
                _fenced(src.get("text") or ""),
                "",
            ]
    return "\n".join(out).rstrip() + "\n"


def _inline(text: str) -> str:
    """Text shown as written: no HTML tags or entities, and no images it did not mean."""
    return re.sub(r"&(?=#?\w+;)", "&amp;", text).replace("<", "&lt;").replace("![", "!\\[")


def _fenced(text: str) -> str:
    fence = "`" * max(3, max((len(r) for r in re.findall(r"`+", text)), default=0) + 1)
    return f"{fence}text\n{text}\n{fence}"


def _settings(ctx: ExchangeContext) -> dict[str, Any]:
    """The settings Docent saves (never a key), with any credentials in a URL masked."""
    data = ctx.settings.saved_fields()
    for name, value in data.items():
        if isinstance(value, str) and "://" in value:
            data[name] = re.sub(r"(://)[^/@\s]+@", r"\1***@", value)
    return data


def _secrets(ctx: ExchangeContext) -> list[str]:
    keys = (ctx.settings.openai_api_key, ctx.settings.cohere_api_key)
    return [k.get_secret_value() for k in keys if k and len(k.get_secret_value()) >= 4]


def _scrub(value: Any, secrets: list[str]) -> Any:
    """``value`` with every occurrence of a secret in its strings replaced by ``***``."""
    if not secrets:
        return value
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, "***")
        return value
    if isinstance(value, dict):
        return {_scrub(k, secrets): _scrub(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v, secrets) for v in value]
    return value


# ============================================================================ import
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


def _stored_source(s: _Source) -> Source:
    """A source as this Docent stores it: what the export carried, less its export-only
    ``document_sha256`` (the passage's own ``sha256`` is a field of every source)."""
    data = s.model_dump(exclude_unset=True)
    data.pop("document_sha256", None)
    return data  # type: ignore[return-value]


def import_session(ctx: ExchangeContext, data: dict | bytes | str) -> ImportReport:
    """Add the exported session to this Docent (all of it, or nothing) and report which of
    the documents its answers cite are missing or changed here."""
    export = parse_export(data)
    exported_sha = {
        name: (doc.get("sha256") if isinstance(doc, dict) else None) for name, doc in export.documents.items()
    }
    cited: list[str] = []
    for m in export.messages:
        for s in m.sources:
            if s.file and s.file not in cited:
                cited.append(s.file)
            if s.file and s.document_sha256 and not exported_sha.get(s.file):
                exported_sha[s.file] = s.document_sha256
    here = {rec.name: rec for rec in ctx.registry.list()}
    missing = [n for n in cited if n not in here]
    changed = [n for n in cited if n in here and exported_sha.get(n) and here[n].sha256 != exported_sha[n]]
    doc_filter = [n for n in export.session.doc_filter or [] if n in here] or None

    messages = [
        Message(
            m.role,
            m.content,
            m.condensed_question,
            [_stored_source(s) for s in m.sources],
            m.meta,
            float(m.created or 0.0),
        )
        for m in export.messages
    ]
    name = export.session.name.strip() or "Imported chat"
    session = ctx.sessions.add_whole(name, messages, created=export.session.created, doc_filter=doc_filter)
    return ImportReport(session.id, session.name, len(export.messages), missing, changed, cited)
