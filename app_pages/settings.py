"""Settings: models, retrieval, chunking and chat; keys for this browser session only.

Non-secret settings are saved to ``<data_dir>/settings.json`` by ``rag_core.save_settings``.
Keys are never saved nor shown back: they live in ``st.session_state`` and reach rag_core
as overrides of ``load_settings``. Fields set by ``DOCENT_*`` variables are read-only here.

Saved values that could not be used (a hand-edited file, say) are flagged on their fields,
which show the default in use; saving writes the file afresh. What is typed is checked
against the same limits before anything is saved: each widget is bounded by its field's,
and the values are checked once more as a whole, with a message per field.
"""

from __future__ import annotations

from typing import Any, get_args

import streamlit as st

from rag_core import DocentError, DocentSettings, env_pinned_fields, load_settings, save_settings
from rag_core.settings import Rejected, check_values, form_fields, leaf_fields, saved_notice
from ui.confirm import confirm
from ui.context import TYPED_KEYS, current_settings, forget_contexts, get_context, typed_keys
from ui.markdown import escape_markdown
from ui.rebuild import mismatch_notice, rebuild_index

SAVED_NOTES = "settings_saved_notes"

pinned = env_pinned_fields()
FIELDS = leaf_fields()  # every setting by its flat name (top_k, not retrieval.top_k)
flagged: dict[str, Rejected] = {}  # saved values that could not be used: the default is shown


def describe(name: str) -> dict[str, Any]:
    """Help text from the settings' own description; read-only when an env var sets it."""
    text = FIELDS[name].description or ""
    if name in pinned:
        text += f"\n\nSet by the environment variable DOCENT_{name.upper()}: change it there."
    if name in flagged:
        bad = flagged[name]
        text = (
            f"⚠️ The saved value {bad.value!r} could not be used ({bad.reason}): the default is shown. "
            f"Save the settings to replace it.\n\n{text}"
        )
    return {"help": text, "disabled": name in pinned, "key": f"setting_{name}"}


def flag(name: str, label: str) -> str:
    return f"⚠️ {label}" if name in flagged else label


def choose(s: DocentSettings, name: str, label: str) -> str:
    options = list(get_args(FIELDS[name].annotation))
    return st.selectbox(flag(name, label), options, index=options.index(s.value(name)), **describe(name))


def field_limits(name: str) -> dict[str, Any]:
    """The widget's bounds: the field's own (``ge``/``le``), so what can be typed can be saved."""
    info = FIELDS[name]
    kind = info.annotation if info.annotation in (int, float) else float
    names = {"ge": "min_value", "le": "max_value"}
    return {names[k]: kind(getattr(m, k)) for m in info.metadata for k in names if getattr(m, k, None) is not None}


def number(s: DocentSettings, name: str, label: str, **options: Any) -> Any:
    kwargs = {**field_limits(name), **options}
    return st.number_input(flag(name, label), value=s.value(name), **kwargs, **describe(name))


def text(s: DocentSettings, name: str, label: str) -> str:
    return st.text_input(flag(name, label), str(s.value(name) or ""), **describe(name)).strip()


def field_widget(s: DocentSettings, name: str) -> Any:
    """A widget chosen from the field's type and limits, for settings without a place of their own."""
    info = FIELDS[name]
    label = name.replace("_", " ").capitalize().replace("Llm ", "LLM ").replace("Cjk ", "CJK ")
    kind, value = info.annotation, s.value(name)
    if get_args(kind) and all(isinstance(option, str) for option in get_args(kind)):
        return choose(s, name, label)
    if kind is bool:
        return st.toggle(flag(name, label), value, **describe(name))
    if kind in (int, float):
        return number(s, name, label)
    if kind is str:
        return text(s, name, label)
    return value


OPENAI_FIELDS = ("openai_base_url", "openai_model")  # shown only when that provider is chosen


def settings_form(s: DocentSettings, provider: str) -> dict[str, Any] | None:
    """The form; returns the edited values when Save was pressed. The provider is chosen
    above it (``provider``), so that the fields it needs appear as soon as it is picked."""
    v: dict[str, Any] = {"llm_provider": provider}
    with st.form("settings"):
        if provider == "openai":
            left, right = st.columns(2)
            with left:
                v["openai_base_url"] = text(s, "openai_base_url", "OpenAI-compatible base URL")
            with right:
                v["openai_model"] = text(s, "openai_model", "OpenAI-compatible model")

        st.subheader("Retrieval")
        left, right = st.columns(2)
        with left:
            v["retrieval_mode"] = choose(s, "retrieval_mode", "Retrieval mode")
            v["top_k"] = number(s, "top_k", "Passages retrieved (top-k)")
            v["similarity_cutoff"] = number(s, "similarity_cutoff", "Similarity cut-off", step=0.05, format="%.2f")
        with right:
            v["rerank_provider"] = choose(s, "rerank_provider", "Rerank")
            v["rerank_top_n"] = number(s, "rerank_top_n", "Passages kept after rerank")
            v["local_rerank_model"] = text(s, "local_rerank_model", "Cross-encoder folder (rerank 'local')") or None

        st.subheader("Conversation")
        left, right = st.columns(2)
        with left:
            v["condense"] = st.toggle(
                flag("condense", "Rewrite follow-up questions"), s.condense, **describe("condense")
            )
            v["history_search"] = st.toggle(
                flag("history_search", "Search follow-ups with the conversation"),
                s.history_search,
                **describe("history_search"),
            )
        with right:
            v["memory_token_limit"] = number(s, "memory_token_limit", "Memory (tokens of history)", step=100)
            v["condense_token_limit"] = number(
                s, "condense_token_limit", "History for the rewrite (tokens; 0: all the memory)", step=100
            )
        v["system_prompt"] = st.text_area(
            flag("system_prompt", "System prompt"), s.system_prompt, height=140, **describe("system_prompt")
        )

        st.subheader("Documents")
        left, right = st.columns(2)
        with left:
            v["chunk_size"] = number(s, "chunk_size", "Chunk size (tokens)", step=32)
        with right:
            v["chunk_overlap"] = number(s, "chunk_overlap", "Chunk overlap (tokens)", step=8)
        st.caption("Chunk size and overlap apply to new uploads; rebuild the index to apply them to every document.")
        v["ocr"] = st.toggle("Read scanned pages (OCR)", s.ocr, **describe("ocr"))
        v["embed_provider"] = choose(s, "embed_provider", "Embedding model")
        st.caption("Changing the embedding model makes the index unusable until it is rebuilt (below).")

        others = [n for n in form_fields() if n not in v and n not in OPENAI_FIELDS]
        if others:
            with st.expander("Advanced"):
                columns = st.columns(2)
                for i, name in enumerate(others):
                    with columns[i % 2]:
                        v[name] = field_widget(s, name)

        if not st.form_submit_button("Save settings", type="primary"):
            return None
    return {name: value for name, value in v.items() if name not in pinned}


def save(before: DocentSettings, values: dict[str, Any]) -> None:
    # Checked first, field by field, against the limits settings.json is read with: nothing
    # is saved unless every value can be used.
    problems = check_values(values)
    if problems:
        for problem in problems.values():
            st.error(f"Not saved: {problem}")
        return
    # save_settings leaves out fields a DOCENT_* variable pins, so the variable's value
    # does not outlive the variable; the keys are never saved.
    try:
        after = load_settings(None, **typed_keys(), **values)  # what this app will now run with
        save_settings(after)
    except DocentError as e:
        st.error(str(e))
        return
    notes = ["Settings saved."]
    if after.embed_provider != before.embed_provider:
        notes.append("The embedding model changed: rebuild the index before asking questions.")
    if (after.chunk_size, after.chunk_overlap) != (before.chunk_size, before.chunk_overlap):
        notes.append("New chunk settings apply to new uploads; rebuild the index to apply them to all documents.")
    st.session_state[SAVED_NOTES] = notes
    forget_contexts()  # the next run builds a context from the new settings
    st.rerun()


KEY_INPUTS = {"openai_api_key": "openai_key_input", "cohere_api_key": "cohere_key_input"}


def use_typed_keys() -> None:
    """Keep what was typed in session_state only, and empty the inputs: never shown back."""
    typed = typed_keys()
    for name, widget in KEY_INPUTS.items():
        value = (st.session_state.get(widget) or "").strip()
        if value:
            typed[name] = value
        st.session_state[widget] = ""
    st.session_state[TYPED_KEYS] = typed
    forget_contexts()


def forget_typed_keys() -> None:
    st.session_state.pop(TYPED_KEYS, None)
    forget_contexts()


def keys_form(s: DocentSettings, provider: str) -> None:
    typed = typed_keys()
    keys = [("cohere_api_key", "Cohere key")]
    if provider == "openai":
        keys.insert(0, ("openai_api_key", "OpenAI-compatible key"))
    for name, label in keys:
        if name in typed:
            st.caption(f"🔑 {label}: entered in this browser session (not saved).")
        elif s.value(name) is not None:
            st.caption(f"🔑 {label}: from the environment or secrets.")
        else:
            st.caption(f"{label}: not set.")
    with st.form("keys"):
        if provider == "openai":
            st.text_input("OpenAI-compatible API key", type="password", key=KEY_INPUTS["openai_api_key"])
        st.text_input("Cohere API key", type="password", key=KEY_INPUTS["cohere_api_key"])
        st.caption("Keys are kept only in this browser session and never written to disk.")
        st.form_submit_button("Use these keys", on_click=use_typed_keys)
    if typed:
        st.button("Forget the keys typed here", on_click=forget_typed_keys)


def index_section() -> None:
    st.subheader("Index")
    try:
        ctx = get_context()
    except DocentError as e:
        st.error(str(e))
        return
    if mismatch_notice(ctx):
        return
    st.caption("Rebuilding re-reads every stored document with the current embedding and chunk settings.")
    question = "Rebuild the whole index now? Every document is parsed and embedded again."
    if confirm("rebuild", "Rebuild index…", question, "Rebuild"):
        rebuild_index(ctx)


st.title("⚙️ Settings")
for note in st.session_state.pop(SAVED_NOTES, []):
    st.success(note)
try:
    settings = current_settings()
except DocentError as e:
    st.error(str(e))
    st.stop()
st.caption(f"Data folder: `{settings.data_dir}`")
notice = saved_notice(settings)
if notice:
    st.warning(escape_markdown(notice), icon="⚠️")
flagged.update(settings.saved_report.fields if settings.saved_report else {})
if pinned:
    st.info(
        "Set by environment variables (read-only here): " + ", ".join(f"DOCENT_{n.upper()}" for n in sorted(pinned))
    )

st.subheader("Answering model")
provider = choose(settings, "llm_provider", "LLM provider")
if provider != settings.llm_provider:
    st.caption("Not saved yet: press **Save settings** below to answer with it.")
edited = settings_form(settings, provider)
if edited is not None:
    save(settings, edited)

st.subheader("API keys")
keys_form(settings, provider)
index_section()
