"""Providers (rag_core.providers): the registries and the embedding tests rank with."""

from __future__ import annotations

import pytest

from rag_core import ConfigError, load_settings
from rag_core.providers.embeddings import build_embedding
from rag_core.providers.llm import build_llm


def test_hash_embedding_ranks_by_shared_words(make_settings):
    emb = build_embedding(make_settings())
    q = emb.get_query_embedding("zephyr pump battery")
    a = emb.get_text_embedding("the zephyr pump runs on a battery")
    b = emb.get_text_embedding("a recipe for apple pie")
    dot = lambda x, y: sum(i * j for i, j in zip(x, y))  # noqa: E731
    assert dot(q, a) > dot(q, b) + 0.3


def test_unknown_provider_lists_the_known_ones(tmp_path):
    with pytest.raises(ConfigError) as e:
        load_settings({"DOCENT_DATA_DIR": str(tmp_path), "DOCENT_LLM_PROVIDER": "gpt9"})
    assert "'local'" in str(e.value) and "'openai'" in str(e.value)


def test_missing_openai_key_says_how_to_fix(tmp_path):
    s = load_settings({"DOCENT_DATA_DIR": str(tmp_path), "DOCENT_LLM_PROVIDER": "openai"})
    with pytest.raises(ConfigError) as e:
        build_llm(s)
    assert "OPENAI_API_KEY" in str(e.value) and "Settings page" in str(e.value)
