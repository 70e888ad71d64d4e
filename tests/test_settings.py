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


# ============================================================================ saved values that cannot be used
def test_a_bad_saved_value_falls_back_to_its_default_and_is_reported(tmp_path):
    from rag_core.settings import saved_notice

    (tmp_path / "settings.json").write_text('{"top_k": 0, "chunk_size": "abc", "chunk_overlap": 16}')
    s = load_settings({"DOCENT_DATA_DIR": str(tmp_path)})
    assert (s.retrieval.top_k, s.chunk_size, s.chunk_overlap) == (5, 256, 16)  # defaults; the good value kept
    assert s.saved_report is not None and set(s.saved_report.fields) == {"top_k", "chunk_size"}
    notice = saved_notice(s)
    assert str(tmp_path / "settings.json") in notice
    assert "top_k = 0" in notice and "chunk_size = 'abc'" in notice and "the default 256 is used" in notice
    assert "DOCENT_" not in notice  # no variable is set: none is blamed


def test_a_variable_is_blamed_only_when_it_is_set(tmp_path):
    import pytest

    from rag_core import ConfigError

    (tmp_path / "settings.json").write_text('{"chunk_size": "abc"}')
    with pytest.raises(ConfigError) as e:
        load_settings({"DOCENT_DATA_DIR": str(tmp_path), "DOCENT_TOP_K": "0"})
    assert "DOCENT_TOP_K" in str(e.value) and "CHUNK_SIZE" not in str(e.value)
    # a variable wins over the file: its field's saved value is neither used nor reported
    s = load_settings({"DOCENT_DATA_DIR": str(tmp_path), "DOCENT_CHUNK_SIZE": "512"})
    assert s.chunk_size == 512 and s.saved_report is None


def test_an_unreadable_file_means_defaults_and_is_kept_aside_when_saving(tmp_path):
    from rag_core.settings import saved_notice

    path = tmp_path / "settings.json"
    for text in ("{not json", "[1, 2]"):
        path.write_text(text)
        s = load_settings({"DOCENT_DATA_DIR": str(tmp_path)})
        assert s.retrieval.top_k == 5 and "cannot be read" in saved_notice(s) and str(path) in saved_notice(s)
    save_settings(s)
    assert load_settings({"DOCENT_DATA_DIR": str(tmp_path)}).saved_report is None
    [aside] = tmp_path.glob("settings.json.unreadable-*")
    assert aside.read_text() == "[1, 2]"  # what the user had is not overwritten


def test_values_to_save_are_checked_field_by_field():
    from rag_core.settings import check_values

    problems = check_values(
        {"top_k": 0, "llm_timeout": -5, "chunk_size": 10**9, "max_file_mb": "abc", "condense": True, "top_k_": 1}
    )
    assert set(problems) == {"top_k", "llm_timeout", "chunk_size", "max_file_mb"}
    assert "greater than or equal to 1" in problems["top_k"] and "greater than 0" in problems["llm_timeout"]
    assert "less than or equal to 8192" in problems["chunk_size"] and "valid integer" in problems["max_file_mb"]
    assert check_values({"top_k": 7, "llm_timeout": 30.0}) == {}


def test_the_class_reads_the_same_layers_as_load_settings(tmp_path, monkeypatch):
    from rag_core.settings import DocentSettings

    (tmp_path / "settings.json").write_text('{"top_k": 7, "chunk_size": 128}')
    monkeypatch.setenv("DOCENT_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("DOCENT_CHUNK_SIZE", "300")
    s = DocentSettings(multi_query="rules")  # flat names, as load_settings takes them
    assert (s.retrieval.top_k, s.chunk_size, s.retrieval.multi_query) == (7, 300, "rules")
