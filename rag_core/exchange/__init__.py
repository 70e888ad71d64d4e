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

``import_session`` validates the whole file first (``checks.parse_export``: a ``ConfigError``
names what is wrong: not JSON, another version, a field of the wrong type, nested too deep) and then writes the session and all
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
from typing import Any, Protocol

from rag_core.exchange.checks import FORMAT_VERSION, MAX_IMPORT_BYTES, MAX_IMPORT_MESSAGES, _Source, parse_export
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


__all__ = [
    "MAX_IMPORT_BYTES",
    "MAX_IMPORT_MESSAGES",
    "ExchangeContext",
    "ImportReport",
    "export_json",
    "export_markdown",
    "export_session",
    "import_session",
    "parse_export",
]


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
