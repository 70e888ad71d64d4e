"""Settings (rag_core.settings): defaults, settings.json, DOCENT_* variables, the nested groups."""

from __future__ import annotations

from rag_core import load_settings, save_settings


def test_environment_overrides_defaults_and_saved_file(tmp_path):
    s = load_settings({"DOCENT_DATA_DIR": str(tmp_path), "DOCENT_TOP_K": "9"})
    assert s.retrieval.top_k == 9 and s.data_dir == tmp_path
    s.chunk_size = 300
    s.retrieval.top_k = 3
    save_settings(s)
    again = load_settings({"DOCENT_DATA_DIR": str(tmp_path), "DOCENT_TOP_K": "9"})
    assert again.chunk_size == 300  # saved value
    assert again.retrieval.top_k == 9  # environment wins over the saved file


def test_every_field_is_described():
    from rag_core.settings import DocentSettings, RetrievalSettings

    fields = {**DocentSettings.model_fields, **RetrievalSettings.model_fields}
    missing = [n for n, f in fields.items() if not f.description]
    assert missing == []


def test_keys_come_from_environment_and_are_never_saved(tmp_path):
    s = load_settings(
        {"DOCENT_DATA_DIR": str(tmp_path), "OPENAI_API_KEY": "sk-test-123456789", "COHERE_API_KEY": "co-999888777"}
    )
    assert s.openai_api_key.get_secret_value() == "sk-test-123456789"
    path = save_settings(s)
    text = path.read_text()
    assert "sk-test" not in text and "co-999" not in text and "api_key" not in text
    assert "sk-test" not in repr(s)


def test_retrieval_settings_are_one_group_read_by_their_flat_names(tmp_path):
    """DOCENT_TOP_K and a settings.json written before the group existed keep working."""
    (tmp_path / "settings.json").write_text('{"top_k": 7, "document_weight": 1.0, "chunk_size": 128}')
    s = load_settings({"DOCENT_DATA_DIR": str(tmp_path), "DOCENT_RELEVANCE_GATE": "true"}, multi_query="rules")
    assert (s.retrieval.top_k, s.retrieval.document_weight, s.chunk_size) == (7, 1.0, 128)
    assert s.retrieval.relevance_gate is True and s.retrieval.multi_query == "rules"
    assert s.value("top_k") == 7 and s.value("chunk_size") == 128
    saved = s.saved_fields()
    assert saved["top_k"] == 7 and "retrieval" not in saved  # settings.json stays flat


def test_a_bad_value_names_the_variable_to_fix(tmp_path):
    import pytest

    from rag_core import ConfigError

    with pytest.raises(ConfigError, match=r"top_k \(env DOCENT_TOP_K\)"):
        load_settings({"DOCENT_DATA_DIR": str(tmp_path), "DOCENT_TOP_K": "0"})
