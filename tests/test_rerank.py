"""Cohere rerank through an httpx.MockTransport: no network, real client code."""

import json

import httpx
import pytest
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from rag_core import build_context
from rag_core.providers.rerank import build_reranker
from tests.pdfgen import ZEPHYR_PAGES, make_pdf


def _ctx(make_settings, llm, tmp_path, handler):
    settings = make_settings(cohere_api_key="co-test-key-0123456789", rerank_top_n=2)
    calls = []

    def record(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return handler(request)

    reranker = build_reranker(settings, http_client=httpx.Client(transport=httpx.MockTransport(record), timeout=2))
    ctx = build_context(settings, llm=llm, reranker=reranker)
    p = tmp_path / "zephyr.pdf"
    make_pdf(ZEPHYR_PAGES, p)
    ctx.ingestion.ingest_file(p)
    return ctx, calls


def test_auto_uses_cohere_only_when_a_key_is_set(make_settings):
    assert build_reranker(make_settings()) is None
    assert build_reranker(make_settings(cohere_api_key="co-x")) is not None
    assert build_reranker(make_settings(rerank_provider="none", cohere_api_key="co-x")) is None


def test_cohere_reorders_and_cuts_to_top_n(make_settings, llm, tmp_path):
    def handler(request):
        body = json.loads(request.content)
        # Put the last candidate first: the safety page.
        last = len(body["documents"]) - 1
        results = [{"index": last, "relevance_score": 0.97}, {"index": 0, "relevance_score": 0.41}]
        return httpx.Response(200, json={"id": "r1", "results": results, "meta": {}})

    ctx, calls = _ctx(make_settings, llm, tmp_path, handler)
    turn = ctx.chat.ask("How many litres per minute?")
    assert len(calls) == 1
    sent = json.loads(calls[0].content)
    assert sent["query"] == "How many litres per minute?" and sent["top_n"] == 2
    assert calls[0].headers["authorization"] == "Bearer co-test-key-0123456789"
    assert [s["score"] for s in turn.sources] == [0.97, 0.41]
    assert turn.notices == []


@pytest.mark.parametrize(
    ("response", "expect"),
    [
        (lambda r: httpx.Response(401, json={"message": "invalid api token"}), "refused"),
        (lambda r: httpx.Response(503, json={"message": "down"}), "skipped"),
        (lambda r: (_ for _ in ()).throw(httpx.ConnectError("no route", request=r)), "skipped"),
        (lambda r: (_ for _ in ()).throw(httpx.ReadTimeout("slow", request=r)), "timed out"),
    ],
)
def test_cohere_failure_still_answers_and_says_rerank_was_skipped(make_settings, llm, tmp_path, response, expect):
    ctx, calls = _ctx(make_settings, llm, tmp_path, response)
    llm.script(answers=["42 litres per minute."])
    turn = ctx.chat.ask("How many litres per minute?")
    assert turn.answer == "42 litres per minute."
    assert len(turn.sources) == 2  # top_n in retrieval order
    assert turn.notices and "Cohere rerank was skipped" in turn.notices[0] and expect in turn.notices[0]
    assert "co-test-key" not in turn.notices[0]
    assert len(calls) <= 3  # bounded: no ten retries


def test_the_installed_cohere_rerank_still_calls_the_client_we_set(make_settings):
    """CohereRerank takes no client or timeout, so build_cohere sets its private ``_client``
    (a bounded timeout, one attempt). An upgrade that renames it must fail here, loudly."""
    from llama_index.postprocessor.cohere_rerank import CohereRerank

    calls = []

    def cohere(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.path)
        return httpx.Response(200, json={"id": "r", "results": [{"index": 0, "relevance_score": 0.5}], "meta": {}})

    guarded = build_reranker(
        make_settings(cohere_api_key="co-test-key"), http_client=httpx.Client(transport=httpx.MockTransport(cohere))
    )
    assert "_client" in CohereRerank.__private_attributes__
    nodes, notices = guarded.rerank([NodeWithScore(node=TextNode(text="a"), score=1.0)], QueryBundle("q"))
    assert calls == ["/v2/rerank"] and notices == [] and nodes[0].score == 0.5
