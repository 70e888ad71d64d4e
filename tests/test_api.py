"""The HTTP API (rag_core/api) through FastAPI's TestClient: sessions, streamed answers with
sources, search, documents and uploads, errors, keys and people. A real Chroma and a real
SQLite in tmp_path; the scripted LLM answers."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from rag_core import build_context
from rag_core.api import ApiKeys, check_address, create_app
from rag_core.errors import ConfigError
from tests.fakes import ScriptedLLM
from tests.pdfgen import ZEPHYR_PAGES, make_pdf

QUESTION = "How many litres per minute does the Zephyr pump deliver?"
ANSWER = "The pump delivers 42 litres per minute [1]."


def events(text: str) -> list[tuple[str, dict]]:
    """Server-sent events as (event, data) pairs."""
    out = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        out.append((lines["event"], json.loads(lines["data"])))
    return out


@pytest.fixture
def indexed(make_settings, tmp_path):
    llm = ScriptedLLM()
    ctx = build_context(make_settings(), llm=llm)
    make_pdf(ZEPHYR_PAGES, tmp_path / "zephyr.pdf")
    (tmp_path / "bananas.txt").write_text("Bananas are yellow fruit that grow in bunches on large herbaceous plants.")
    ctx.ingestion.ingest_paths([tmp_path / "zephyr.pdf", tmp_path / "bananas.txt"])
    return ctx, llm


@pytest.fixture
def client(indexed):
    ctx, _ = indexed
    with TestClient(create_app(ctx), raise_server_exceptions=False) as c:
        yield c


def test_a_session_is_created_listed_renamed_exported_and_deleted(client):
    made = client.post("/api/chat/sessions", json={"name": "pumps"})
    assert made.status_code == 201
    sid = made.json()["id"]
    assert [s["name"] for s in client.get("/api/chat/sessions").json()] == ["pumps"]
    assert client.patch(f"/api/sessions/{sid}", json={"name": "Zephyr"}).json()["name"] == "Zephyr"
    limited = client.patch(f"/api/sessions/{sid}", json={"documents": ["zephyr.pdf"]}).json()
    assert limited["documents"] == ["zephyr.pdf"]
    assert client.get(f"/api/sessions/{sid}").json()["history"] == []
    exported = client.get(f"/api/sessions/{sid}/export")
    assert exported.status_code == 200 and exported.json()["session"]["name"] == "Zephyr"
    assert client.get(f"/api/sessions/{sid}/export?format=md").text.startswith("#")
    imported = client.post("/api/chat/sessions/import", json=exported.json())
    assert imported.status_code == 201 and imported.json()["name"].startswith("Zephyr")
    assert client.delete(f"/api/sessions/{sid}").status_code == 204
    assert client.get(f"/api/sessions/{sid}").status_code == 404


def test_an_answer_streams_sources_first_then_tokens_then_the_stored_message(client, indexed):
    _, llm = indexed
    llm.script(answers=[ANSWER])
    sid = client.post("/api/chat/sessions", json={}).json()["id"]
    r = client.post(f"/api/sessions/{sid}/messages", json={"question": QUESTION})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    got = events(r.text)
    kinds = [k for k, _ in got]
    assert kinds[0] == "sources" and kinds[-2:] == ["message", "done"]
    assert set(kinds[1:-2]) == {"token"} and len(kinds[1:-2]) > 1  # word by word
    first = got[0][1]
    assert first["sources"][0]["file"] == "zephyr.pdf" and first["sources"][0]["page"] == 2
    assert first["preview"] is not None
    assert "".join(d["text"] for k, d in got if k == "token") == ANSWER
    message = got[-2][1]
    assert message["answer"] == ANSWER and message["saved"] and message["message_id"]
    assert {"first_token_s", "total_s"} <= set(message["timings"]) and "figures_checked" in message
    assert got[-1][1] == {"ok": True}
    stored = client.get(f"/api/sessions/{sid}/messages").json()
    assert [m["role"] for m in stored] == ["user", "assistant"]
    assert stored[1]["content"] == ANSWER and stored[1]["id"] == message["message_id"]


def test_an_answer_without_streaming_and_a_follow_up_with_use_optimized_off(client, indexed):
    _, llm = indexed
    sid = client.post("/api/chat/sessions", json={}).json()["id"]
    llm.script(answers=["Each pump draws 8 amperes."])
    first = client.post(
        f"/api/sessions/{sid}/messages", json={"question": "How much current does a Zephyr pump draw?", "stream": False}
    )
    assert first.status_code == 200 and first.json()["answer"] == "Each pump draws 8 amperes."
    llm.script(answers=["Because 16 A exceeds 10 A."])
    plain = client.post(
        f"/api/sessions/{sid}/messages?use_optimized=false", json={"question": "And why not two?", "stream": False}
    ).json()
    assert plain["condensed_question"] == "And why not two?" and llm.prompts == []  # searched as typed
    llm.script(condense=["Why can't two Zephyr pumps share one battery?"], answers=["16 A exceeds 10 A."])
    condensed = client.post(f"/api/sessions/{sid}/messages", json={"question": "And why not two?", "stream": False})
    assert condensed.json()["condensed_question"] == "Why can't two Zephyr pumps share one battery?"
    assert len(client.get(f"/api/sessions/{sid}/messages").json()) == 6


def test_search_returns_file_page_passage_and_score(client):
    r = client.post("/api/vector/search", json={"query": "Zephyr pump litres per minute", "top_k": 3})
    assert r.status_code == 200
    top = r.json()["sources"][0]
    assert (top["file"], top["page"]) == ("zephyr.pdf", 2)
    assert "litres" in top["text"] and isinstance(top["score"], float)
    only = client.post("/api/vector/search", json={"query": "yellow fruit", "documents": ["bananas.txt"]}).json()
    assert {s["file"] for s in only["sources"]} == {"bananas.txt"}


def test_documents_are_uploaded_by_a_job_listed_and_deleted(client, indexed):
    ctx, _ = indexed
    r = client.post(
        "/api/documents", files=[("files", ("tea.md", b"# Tea\nGreen tea is steamed soon after picking.\n"))]
    )
    assert r.status_code == 202
    job = r.json()
    ctx.jobs.wait(job["id"], 60)
    done = client.get(f"/api/jobs/{job['id']}").json()
    assert done["state"] == "done" and done["files"][0]["result"]["status"] == "indexed"
    assert [j["id"] for j in client.get("/api/jobs").json()] == [job["id"]]
    assert "tea.md" in {d["name"] for d in client.get("/api/documents").json()}
    refused = client.post("/api/documents", files=[("files", ("book.epub", b"not a supported type"))]).json()
    ctx.jobs.wait(refused["id"], 60)
    result = client.get(f"/api/jobs/{refused['id']}").json()["files"][0]["result"]
    assert result["status"] == "failed" and ".epub" in result["reason"]  # the Upload page's refusal
    assert client.delete("/api/documents/tea.md").status_code == 204
    assert client.delete("/api/documents/tea.md").status_code == 404
    assert client.get("/api/jobs/nope").status_code == 404


def test_an_oversized_upload_is_refused_with_413_and_nothing_is_stored(make_settings, tmp_path):
    ctx = build_context(make_settings(max_file_mb=1), llm=ScriptedLLM())
    with TestClient(create_app(ctx), raise_server_exceptions=False) as c:
        big = b"word " * 300_000  # 1.5 MB
        r = c.post("/api/documents", files=[("files", ("small.txt", b"fine")), ("files", ("big.txt", big))])
        assert r.status_code == 413 and "big.txt" in r.json()["detail"] and "limit 1 MB" in r.json()["detail"]
        whole = c.post("/api/documents", files=[("files", (f"{i}.txt", big)) for i in range(4)])
        assert whole.status_code == 413  # the request itself, by its length, before it is read
        assert c.get("/api/jobs").json() == [] and c.get("/api/documents").json() == []


def test_malformed_requests_get_4xx_that_say_the_fix(client):
    r = client.post("/api/vector/search", json={"top_k": 0})
    assert r.status_code == 422
    fields = {tuple(d["loc"]) for d in r.json()["detail"]}
    assert ("body", "query") in fields and ("body", "top_k") in fields
    assert (
        client.post(
            "/api/vector/search", content=b"{not json", headers={"content-type": "application/json"}
        ).status_code
        == 422
    )
    sid = client.post("/api/chat/sessions", json={}).json()["id"]
    empty = client.post(f"/api/sessions/{sid}/messages", json={"question": "   "})
    assert empty.status_code == 400 and "empty" in empty.json()["detail"]
    assert client.post("/api/sessions/nope/messages", json={"question": "hi"}).status_code == 404
    assert client.patch(f"/api/sessions/{sid}", json={"name": ""}).status_code == 422
    assert client.get(f"/api/sessions/{sid}/export?format=pdf").status_code == 422
    assert client.get(f"/api/sessions/{sid}/messages").json() == []  # nothing stored half


def test_no_traceback_reaches_a_client(indexed, monkeypatch):
    ctx, _ = indexed

    def broken(*a, **kw):
        raise RuntimeError("secret internals /home/x/file.py line 3")

    monkeypatch.setattr(ctx.chat, "search", broken)
    with TestClient(create_app(ctx), raise_server_exceptions=False) as c:
        r = c.post("/api/vector/search", json={"query": "anything"})
    assert r.status_code == 500 and r.json()["detail"].startswith("Internal error")
    assert "secret" not in r.text and "Traceback" not in r.text


def test_an_error_while_answering_is_an_error_event_and_the_question_is_kept(client, indexed):
    _, llm = indexed
    llm.script(answers=[RuntimeError("the model fell over")])
    sid = client.post("/api/chat/sessions", json={}).json()["id"]
    got = events(client.post(f"/api/sessions/{sid}/messages", json={"question": QUESTION}).text)
    assert [k for k, _ in got] == ["sources", "error", "done"]
    assert got[1][1]["status"] == 502 and "Your question is kept" in got[1][1]["detail"]
    assert got[-1][1] == {"ok": False}
    assert [m["role"] for m in client.get(f"/api/sessions/{sid}/messages").json()] == ["user"]


def test_keys_say_whose_sessions_a_request_sees(indexed):
    ctx, _ = indexed
    keys = ApiKeys.parse(["ana@example.org:key-of-ana-123", "bo@example.org:key-of-bo-456"])
    with TestClient(create_app(ctx, keys), raise_server_exceptions=False) as c:
        assert c.get("/api/chat/sessions").status_code == 401
        assert c.get("/api/chat/sessions", headers={"Authorization": "Bearer wrong-key-789"}).status_code == 401
        assert c.get("/v1/models").status_code == 401
        ana = {"Authorization": "Bearer key-of-ana-123"}
        bo = {"X-API-Key": "key-of-bo-456"}
        sid = c.post("/api/chat/sessions", json={"name": "ana's"}, headers=ana).json()["id"]
        assert [s["id"] for s in c.get("/api/chat/sessions", headers=ana).json()] == [sid]
        assert c.get("/api/chat/sessions", headers=bo).json() == []
        assert c.get(f"/api/sessions/{sid}", headers=bo).status_code == 404
        assert c.delete(f"/api/sessions/{sid}", headers=bo).status_code == 404
        assert c.post(f"/api/sessions/{sid}/messages", json={"question": "hi"}, headers=bo).status_code == 404
        assert c.get("/api/health").json()["ok"] is True  # no key needed
        assert c.get("/docs").status_code == 200 and c.get("/openapi.json").status_code == 200
    assert ctx.for_person("ana@example.org").sessions.get(sid).name == "ana's"


def test_an_address_beyond_loopback_needs_a_key_and_team_keys_name_a_person():
    check_address("127.0.0.1", ApiKeys())
    check_address("::1", ApiKeys())
    check_address("localhost", ApiKeys())
    with pytest.raises(ConfigError, match="without a key"):
        check_address("0.0.0.0", ApiKeys())
    check_address("0.0.0.0", ApiKeys.parse(["a-long-key-1"]))
    with pytest.raises(ConfigError, match="PERSON:KEY"):
        ApiKeys.parse(["a-long-key-1"], team=True)
    with pytest.raises(ConfigError, match="at least 8"):
        ApiKeys.parse(["short"])
    keys = ApiKeys.parse(["Ana@Example.org:a-long-key-1, bare-key-2222"])
    assert keys.person_of("a-long-key-1") == "ana@example.org" and keys.person_of("bare-key-2222") == ""
    assert keys.person_of("a-long-key-") is None and "a-long-key-1" not in repr(keys)


def test_a_web_page_cannot_use_the_api_unless_its_origin_is_allowed(indexed):
    ctx, _ = indexed
    hosts = ["127.0.0.1", "localhost", "::1", "[::1]"]
    app = create_app(ctx, origins=["https://front.example.org"], hosts=hosts)
    with TestClient(app, base_url="http://127.0.0.1:8000", raise_server_exceptions=False) as c:
        evil = {"Origin": "https://evil.example.com"}
        upload = c.post("/api/documents", files=[("files", ("x.txt", b"planted"))], headers=evil)
        assert upload.status_code == 403 and "--cors-origin" in upload.json()["detail"]
        assert c.get("/api/jobs").json() == []  # nothing was uploaded
        front = {"Origin": "https://front.example.org"}
        listed = c.get("/api/chat/sessions", headers=front)
        assert listed.status_code == 200 and listed.headers["access-control-allow-origin"] == front["Origin"]
        asked = {**front, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization"}
        assert c.options("/api/chat/sessions", headers=asked).status_code == 200  # the preflight
        same = c.post("/api/chat/sessions", headers={"Origin": "http://127.0.0.1:8000"})  # Swagger UI at /docs
        assert same.status_code == 201
        assert c.get("/api/chat/sessions").status_code == 200  # curl, scripts: no Origin
    with TestClient(app, base_url="http://rebound.example.com:8000", raise_server_exceptions=False) as c:
        assert c.get("/api/chat/sessions").status_code == 400  # DNS rebinding: not this machine's name


class LoadingLLM(ScriptedLLM):
    """A local model that has to be loaded before its first answer."""

    def load(self) -> None:
        pass


def test_the_local_models_first_load_is_streamed_as_loading_events(make_settings, tmp_path):
    ctx = build_context(make_settings(llm_provider="local"), llm=LoadingLLM(answers=["It is 42 [1]."]))
    make_pdf(ZEPHYR_PAGES, tmp_path / "zephyr.pdf")
    ctx.ingestion.ingest_paths([tmp_path / "zephyr.pdf"])
    with TestClient(create_app(ctx), raise_server_exceptions=False) as c:
        sid = c.post("/api/chat/sessions").json()["id"]
        got = events(c.post(f"/api/sessions/{sid}/messages", json={"question": QUESTION}).text)
    kinds = [k for k, _ in got]
    assert kinds[0] == "sources" and kinds[1] == "loading" and "Loading the local model" in got[1][1]["detail"]
    assert kinds.index("token") > 1 and got[-2][1]["answer"] == "It is 42 [1]."
    assert "model_load_s" in got[-2][1]["timings"]
