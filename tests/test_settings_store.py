import json
import sqlite3

import pytest

from rag_core import ConfigError, NotFoundError, load_settings, save_settings
from rag_core.providers.embeddings import build_embedding
from rag_core.providers.llm import build_llm
from rag_core.store import MIGRATIONS, Database, Message, SessionStore


def test_environment_overrides_defaults_and_saved_file(tmp_path):
    s = load_settings({"DOCENT_DATA_DIR": str(tmp_path), "DOCENT_TOP_K": "9"})
    assert s.top_k == 9 and s.data_dir == tmp_path
    s.chunk_size = 300
    s.top_k = 3
    save_settings(s)
    again = load_settings({"DOCENT_DATA_DIR": str(tmp_path), "DOCENT_TOP_K": "9"})
    assert again.chunk_size == 300  # saved value
    assert again.top_k == 9  # environment wins over the saved file


def test_every_field_is_described():
    from rag_core.settings import DocentSettings

    missing = [n for n, f in DocentSettings.model_fields.items() if not f.description]
    assert missing == []


def test_keys_come_from_environment_and_are_never_saved(tmp_path):
    s = load_settings({"DOCENT_DATA_DIR": str(tmp_path), "OPENAI_API_KEY": "sk-test-123456789", "COHERE_API_KEY": "co-999888777"})
    assert s.openai_api_key.get_secret_value() == "sk-test-123456789"
    path = save_settings(s)
    text = path.read_text()
    assert "sk-test" not in text and "co-999" not in text and "api_key" not in text
    assert "sk-test" not in repr(s)


def test_unknown_provider_lists_the_known_ones(tmp_path):
    with pytest.raises(ConfigError) as e:
        load_settings({"DOCENT_DATA_DIR": str(tmp_path), "DOCENT_LLM_PROVIDER": "gpt9"})
    assert "'local'" in str(e.value) and "'openai'" in str(e.value)


def test_missing_openai_key_says_how_to_fix(tmp_path):
    s = load_settings({"DOCENT_DATA_DIR": str(tmp_path), "DOCENT_LLM_PROVIDER": "openai"})
    with pytest.raises(ConfigError) as e:
        build_llm(s)
    assert "OPENAI_API_KEY" in str(e.value) and "Settings page" in str(e.value)


def test_hash_embedding_ranks_by_shared_words(make_settings):
    emb = build_embedding(make_settings())
    q = emb.get_query_embedding("zephyr pump battery")
    a = emb.get_text_embedding("the zephyr pump runs on a battery")
    b = emb.get_text_embedding("a recipe for apple pie")
    dot = lambda x, y: sum(i * j for i, j in zip(x, y))  # noqa: E731
    assert dot(q, a) > dot(q, b) + 0.3


def test_migrations_are_numbered_recorded_and_idempotent(tmp_path):
    db = Database(tmp_path / "x.db")
    assert db.applied_migrations() == [m.__name__ for m in MIGRATIONS]
    Database(tmp_path / "x.db")  # reopening applies nothing twice
    rows = sqlite3.connect(tmp_path / "x.db").execute("SELECT count(*) FROM _migrations").fetchone()
    assert rows[0] == len(MIGRATIONS)
    mode = sqlite3.connect(tmp_path / "x.db").execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_sessions_crud_and_messages(tmp_path):
    store = SessionStore(Database(tmp_path / "s.db"))
    a = store.create("First")
    b = store.create()
    assert b.name.startswith("Chat ")
    store.rename(a.id, "Renamed")
    store.append(a.id, Message("user", "hello"))
    store.append(a.id, Message("assistant", "hi", condensed_question="hello?", sources=[{"file": "f.pdf", "page": 2, "score": 0.5, "text": "t"}]))
    msgs = store.messages(a.id)
    assert [m.role for m in msgs] == ["user", "assistant"]
    assert msgs[1].sources[0]["page"] == 2 and msgs[1].condensed_question == "hello?"
    assert store.list()[0].id == a.id  # most recently updated first
    store.set_doc_filter(a.id, ["b.pdf", "a.pdf"])
    assert store.get(a.id).doc_filter == ["a.pdf", "b.pdf"]
    store.delete(a.id)
    with pytest.raises(NotFoundError):
        store.get(a.id)
    assert json.dumps([s.name for s in store.list()]) == json.dumps([b.name])
    with pytest.raises(NotFoundError):
        store.append("nope", Message("user", "x"))
