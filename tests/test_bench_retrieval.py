"""The retrieval benchmark (rag_core.bench.retrieval): synthetic chunks written as an ingest
leaves them, and a new process over the folder, as a person starting Docent over a library."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from rag_core import build_context
from rag_core.bench import fills, retrieval
from rag_core.bench.fills import fill_key, filled_copy
from rag_core.bench.retrieval import bench_retrieval


@pytest.mark.slow  # new processes and a `chroma run`
def test_each_size_reports_a_new_process_over_the_library_and_its_vector_index(make_settings, tmp_path):
    settings = make_settings()
    said: list[str] = []
    out = bench_retrieval(settings, (200, 2000), queries=5, report=said.append, fills=tmp_path / "fills")
    assert out["chunks"] == 2000 and len(said) == 2 and said[1].startswith("  2000 chunks (filled in")
    assert not out["200"]["fill_reused"] and not out["2000"]["fill_reused"]  # nothing kept yet
    for size in ("200", "2000"):
        process = out[size]["process"]
        assert "error" not in process, process
        assert process["first_search_s"] >= process["start_s"] > 0
        assert process["peak_rss_mb"] >= process["rss_mb"] > 50
        assert out[size]["hybrid_p50_s"] > 0 and out[size]["raw_p50_s"] > 0
    assert out["2000"]["vectors_mb"] > out["200"]["vectors_mb"] > 0
    assert out["process_vectors_added_mb"] == round(out["2000"]["vectors_mb"] - out["200"]["vectors_mb"], 1)
    assert "process_rss_added_mb" in out
    served = out["2000"]["process_served"]  # the folder's vectors in `chroma run`'s memory instead
    assert "error" not in served, served
    assert served["chroma"] == "127.0.0.1" and out["2000"]["process"]["chroma"] == "embedded"
    assert served["first_search_s"] >= served["start_s"] > 0 and served["rss_mb"] > 50
    assert out["served_process_rss_added_mb"] == round(served["rss_mb"] - out["200"]["process"]["rss_mb"], 1)


@pytest.mark.slow  # a child process fills
def test_a_fill_is_kept_copied_to_each_run_and_made_again_when_its_code_changes_or_when_asked(
    make_settings, tmp_path, monkeypatch
):
    settings = make_settings()
    kept = tmp_path / "fills"
    first, fill_s, reused = filled_copy(settings, 300, kept)
    assert not reused and fill_s > 0
    again, again_s, reused = filled_copy(settings, 300, kept)
    assert reused and again_s == fill_s and again != first
    assert [p.name for p in kept.iterdir()] == [f"fill-300-{fill_key(settings, 300)}"]
    for folder in (first, again):  # each a library a new process opens as it is, nothing to recover
        ctx = build_context(settings.model_copy(update={"data_dir": folder}))
        assert ctx.index.chunk_count() == 300 and ctx.reregistered == []
        assert len(ctx.ingestion.registry.list(status=None)) == 3
        assert ctx.chat.retrieve("revenue margin quarter")
    ctx.ingestion.delete("synthetic-000000.txt")  # a copy changed: the kept fill is not
    assert filled_copy(settings, 300, kept)[2] is True
    fresh = build_context(settings.model_copy(update={"data_dir": filled_copy(settings, 300, kept)[0]}))
    assert fresh.index.chunk_count() == 300

    abandoned = kept / ".making-fill-300-0123-999999999"  # a benchmark killed while it filled
    (abandoned / "data").mkdir(parents=True)
    assert fill_key(settings, 300) != fill_key(settings, 3000)
    assert filled_copy(settings, 300, kept, refill=True)[2] is False
    monkeypatch.setattr(fills, "FILL_VERSION", fills.FILL_VERSION + 1)  # what the fill writes changed
    assert filled_copy(settings, 300, kept)[2] is False
    assert [p.name for p in kept.iterdir()] == [f"fill-300-{fill_key(settings, 300)}"]  # the old one let go
    assert not abandoned.exists()


def test_the_synthetic_documents_are_registered_whole_so_a_new_process_has_nothing_to_recover(make_settings):
    """Unregistered chunks made every start read each document's chunks from Chroma (the
    recovery of lost registrations): the start time then measured that, not an app's start."""
    settings = make_settings()
    ctx = build_context(settings)
    retrieval._fill(ctx, 0, 300, ctx.index.embed_dim)
    records = ctx.ingestion.registry.list(status=None)
    assert sorted(r.name for r in records) == [f"synthetic-{n:06d}.txt" for n in range(3)]
    assert sum(r.chunks for r in records) == ctx.index.chunk_count() == 300
    again = build_context(settings)
    assert again.reregistered == [] and not [n for n in again.notices if "synthetic-" in n]


def test_the_chunks_drawn_at_once_have_the_words_of_the_sentences_drawn_one_by_one():
    """``_texts`` (numpy, a batch at once) stands for ``_sentence`` (one word at a time): the
    same length, the same most common words at the same rates, the same share of rare terms."""

    def profile(texts: list[str]) -> tuple[float, float, list[tuple[str, float]]]:
        words = Counter(w.rstrip(".") for t in texts for w in t.split())
        total = sum(words.values())
        rare = sum(n for w, n in words.items() if w[0] == "w" and w[1:].isdigit())
        top = [(w, n / total) for w, n in words.most_common(4)]
        return total / len(texts), rare / total, top

    rng = random.Random(3)
    one_by_one = profile([" ".join(retrieval._sentence(rng, 12) for _ in range(6)) for _ in range(3000)])
    at_once = profile(retrieval._texts(0, 1500) + retrieval._texts(1500, 1500))
    assert at_once[0] == one_by_one[0] == 90  # 6 sentences of 12 words and 3 rare terms
    assert at_once[1] == pytest.approx(one_by_one[1], abs=0.01)
    assert [w for w, _ in at_once[2]] == [w for w, _ in one_by_one[2]] == ["revenue", "margin", "quarter", "segment"]
    for (_, a), (_, b) in zip(at_once[2], one_by_one[2], strict=True):
        assert a == pytest.approx(b, abs=0.01)
    assert retrieval._texts(7, 5) == retrieval._texts(7, 5) != retrieval._texts(8, 5)  # seeded
