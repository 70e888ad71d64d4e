"""The OpenAI-compatible routes (rag_core/api/openai_compat.py) through FastAPI's TestClient:
the conversation in ``messages`` is the chat, the sources in the ``docent`` field, OpenAI's
chunks and errors; ``session_id`` asks in a stored session."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from rag_core import build_context
from rag_core.api import create_app
from tests.fakes import ScriptedLLM
from tests.pdfgen import ZEPHYR_PAGES, make_pdf

QUESTION = "How many litres per minute does the Zephyr pump deliver?"


@pytest.fixture
def setup(make_settings, tmp_path):
    llm = ScriptedLLM()
    ctx = build_context(make_settings(), llm=llm)
    make_pdf(ZEPHYR_PAGES, tmp_path / "zephyr.pdf")
    ctx.ingestion.ingest_paths([tmp_path / "zephyr.pdf"])
    with TestClient(create_app(ctx), raise_server_exceptions=False) as c:
        yield c, ctx, llm


def chunks(text: str) -> list:
    datas = [line[6:] for line in text.splitlines() if line.startswith("data: ")]
    assert datas[-1] == "[DONE]"
    return [json.loads(d) for d in datas[:-1]]


def test_a_completion_answers_with_markers_and_sources_in_the_docent_field(setup):
    client, ctx, llm = setup
    llm.script(answers=["It delivers 42 litres per minute [1]."])
    r = client.post(
        "/v1/chat/completions", json={"model": "docent", "messages": [{"role": "user", "content": QUESTION}]}
    )
    assert r.status_code == 200
    body = r.json()
    assert body["object"] == "chat.completion" and body["model"] == "docent"
    assert body["choices"][0]["message"] == {"role": "assistant", "content": "It delivers 42 litres per minute [1]."}
    assert body["choices"][0]["finish_reason"] == "stop" and body["usage"]["completion_tokens"] > 0
    source = body["docent"]["sources"][0]
    assert (source["file"], source["page"]) == ("zephyr.pdf", 2) and "litres" in source["text"]
    assert ctx.sessions.list() == []  # a one-off question: nothing stored


def test_the_messages_before_the_question_are_its_history(setup):
    client, _, llm = setup
    llm.script(condense=["How much current does one Zephyr pump draw?"], answers=["8 amperes."])
    messages = [
        {"role": "system", "content": "You are a pirate."},
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": "42 litres per minute."},
        {"role": "user", "content": [{"type": "text", "text": "And the current it draws?"}]},
    ]
    body = client.post("/v1/chat/completions", json={"model": "docent", "messages": messages}).json()
    assert body["docent"]["condensed_question"] == "How much current does one Zephyr pump draw?"
    assert QUESTION in llm.prompts[-1] and "42 litres per minute." in llm.prompts[-1]
    assert all("pirate" not in (m.content or "") for m in llm.chats[-1])  # Docent's own prompt


def test_a_streamed_completion_is_openai_chunks_with_the_sources_first(setup):
    client, _, llm = setup
    llm.script(answers=["It delivers 42 litres per minute [1]."])
    r = client.post(
        "/v1/chat/completions",
        json={"model": "docent", "messages": [{"role": "user", "content": QUESTION}], "stream": True, "temperature": 0},
    )
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    got = chunks(r.text)
    assert {c["object"] for c in got} == {"chat.completion.chunk"} and len({c["id"] for c in got}) == 1
    assert got[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert got[0]["docent"]["sources"][0]["file"] == "zephyr.pdf"
    words = "".join(c["choices"][0]["delta"].get("content", "") for c in got)
    assert words == "It delivers 42 litres per minute [1]."
    assert got[-1]["choices"][0]["finish_reason"] == "stop" and got[-1]["docent"]["timings"]["total_s"] > 0


def test_session_id_asks_in_a_stored_session(setup):
    client, ctx, llm = setup
    sid = client.post("/api/chat/sessions", json={"name": "via openai"}).json()["id"]
    llm.script(answers=["42 litres per minute."])
    body = client.post(
        "/v1/chat/completions",
        json={"model": "docent", "messages": [{"role": "user", "content": QUESTION}], "session_id": sid},
    ).json()
    assert body["docent"]["session_id"] == sid and body["docent"]["message_id"]
    assert [m.role for m in ctx.sessions.messages(sid)] == ["user", "assistant"]


def test_openai_errors_carry_the_message_where_the_client_reads_it(setup):
    client, _, _ = setup
    wrong = client.post(
        "/v1/chat/completions", json={"model": "gpt-4o", "messages": [{"role": "user", "content": "x"}]}
    )
    assert wrong.status_code == 404 and "docent" in wrong.json()["error"]["message"]
    last = client.post(
        "/v1/chat/completions",
        json={"model": "docent", "messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]},
    )
    assert last.status_code == 400 and "last message" in last.json()["error"]["message"]
    invalid = client.post("/v1/chat/completions", json={"model": "docent", "messages": []})
    assert invalid.status_code == 422 and invalid.json()["error"]["type"] == "invalid_request_error"
    assert client.get("/v1/models").json()["data"][0]["id"] == "docent"
    assert client.get("/v1/models/docent").status_code == 200 and client.get("/v1/models/x").status_code == 404


def test_an_answer_is_regenerated_through_the_session_route(setup):
    client, ctx, llm = setup
    sid = client.post("/api/chat/sessions", json={}).json()["id"]
    llm.script(answers=["first answer", "second answer"])
    client.post(f"/api/sessions/{sid}/messages", json={"question": QUESTION, "stream": False})
    again = client.post(f"/api/sessions/{sid}/messages", json={"regenerate": True, "stream": False}).json()
    assert again["answer"] == "second answer"
    assert [m.content for m in ctx.sessions.messages(sid)] == [QUESTION, "second answer"]


def test_the_benchmark_times_the_api_against_the_cli_path(setup):
    from rag_core.bench.api import bench_api, summary

    _, ctx, _ = setup
    said: list[str] = []
    result = bench_api(ctx, [QUESTION, "How much current does one Zephyr pump draw?"], said.append, runs=2)
    assert result["questions"] == 2 and len(result["rows"]) == 4 and len(said) == 4
    for name in ("sources", "ttft"):
        assert result[f"api_{name}_p50_s"] > 0 and result[f"cli_{name}_p50_s"] > 0
        assert result[f"api_{name}_vs_cli"] > 0 and isinstance(result[f"api_{name}_within_ms"], bool)
    lines = summary(result)
    assert lines[0].startswith("time to sources") and "API/CLI" in lines[1]
    assert len(ctx.sessions.list()) == 2 * (4 + 1)  # each path, each question, in a new session


def test_an_unknown_route_is_a_json_404_in_openai_form_under_v1(setup):
    client, _, _ = setup
    r = client.post("/v1/completions", json={"prompt": "x"})
    assert r.status_code == 404 and r.json()["error"]["message"] == "Not Found"
    assert client.get("/api/nothing").json() == {"detail": "Not Found"}
