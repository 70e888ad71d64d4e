"""API keys never reach SQLite, Chroma, the docstore, settings.json, logs, answers or error
messages, even when the endpoint fails or echoes the key back.

The openai provider talks to a fake OpenAI-compatible server on 127.0.0.1 (real client, real
HTTP, streaming included); Cohere rerank goes through an httpx MockTransport in-process and to
the same fake server from the CLI. (Fencing of retrieved text against prompt injection is
tested in test_chat.py; with a real model in test_real_models.py.)
"""

import json
import logging
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import httpx
import pytest

from rag_core import ProviderError, build_context, load_settings, save_settings
from rag_core.providers.rerank import build_reranker
from tests.pdfgen import ZEPHYR_PAGES, make_pdf

ROOT = Path(__file__).resolve().parents[1]
OPENAI_KEY = "sk-test-SECRET123-openai-9f8e7d6c5b4a"
COHERE_KEY = "co-SECRET456-cohere-1a2b3c4d5e6f"
SECRETS = (OPENAI_KEY, COHERE_KEY, "SECRET123", "SECRET456")


class FakeOpenAI(BaseHTTPRequestHandler):
    """/v1/chat/completions (plain and streamed) and /v2/rerank. ``mode`` 'ok', or an HTTP
    status whose error body echoes the Authorization header, as a careless proxy might."""

    mode: str = "ok"
    echo: str = "header"  # 'header': "Bearer <key>"; 'bare': just the key
    requests: ClassVar[list[dict]] = []

    def log_message(self, *args):  # keep the test output clean
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        auth = self.headers.get("authorization", "")
        type(self).requests.append({"path": self.path, "auth": auth, "body": body})
        if self.mode != "ok":
            shown = auth if self.echo == "header" else auth.split()[-1]
            return self._json(int(self.mode), {"error": {"message": f"Incorrect API key provided: {shown}"}})
        if self.path.endswith("/rerank"):
            results = [{"index": i, "relevance_score": 1 - i / 10} for i in reversed(range(len(body["documents"])))]
            return self._json(200, {"id": "r", "results": results[: body.get("top_n") or 3], "meta": {}})
        if body.get("stream"):
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            for word in ("The pump delivers", " 42 litres", " per minute."):
                chunk = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
                         "choices": [{"index": 0, "delta": {"role": "assistant", "content": word}}]}  # fmt: skip
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")
            return None
        message = {"role": "assistant", "content": "What battery does the Zephyr pump use?"}
        return self._json(200, {"id": "c", "object": "chat.completion", "created": 0, "model": "m",
                                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})  # fmt: skip

    def _json(self, status: int, obj: dict) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def fake_openai():
    FakeOpenAI.mode, FakeOpenAI.echo, FakeOpenAI.requests = "ok", "header", []
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeOpenAI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def keyed_env(monkeypatch, fake_openai, tmp_path):
    """The environment a user with cloud keys has: keys and provider choice in variables."""
    env = {
        "OPENAI_API_KEY": OPENAI_KEY,
        "COHERE_API_KEY": COHERE_KEY,
        "DOCENT_LLM_PROVIDER": "openai",
        "DOCENT_OPENAI_BASE_URL": f"http://127.0.0.1:{fake_openai.server_port}/v1",
        "DOCENT_EMBED_PROVIDER": "hash",
        "DOCENT_DATA_DIR": str(tmp_path / "data"),
    }
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return env


def leaks(data_dir: Path, *texts: str) -> list[str]:
    """Where any secret appears: files under ``data_dir`` (SQLite and its WAL, Chroma's files,
    docstore.json, settings.json, stored copies) byte for byte, and the given texts."""
    found = []
    for path in sorted(p for p in data_dir.rglob("*") if p.is_file()):
        data = path.read_bytes()
        found += [f"{path.relative_to(data_dir)}: {s}" for s in SECRETS if s.encode() in data]
    for i, text in enumerate(texts):
        found += [f"text #{i}: {s}" for s in SECRETS if s in text]
    return found


def ingest_zephyr(ctx, tmp_path: Path) -> None:
    path = tmp_path / "zephyr.pdf"
    make_pdf(ZEPHYR_PAGES, path)
    assert ctx.ingestion.ingest_file(path).status == "indexed"


def test_a_session_with_cloud_keys_leaves_no_key_anywhere(keyed_env, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)  # the chattiest logs: openai, httpx, httpcore, rag_core
    settings = load_settings()
    cohere_calls = []

    def cohere(request: httpx.Request) -> httpx.Response:
        cohere_calls.append(request)
        if len(cohere_calls) == 1:
            return httpx.Response(200, json={"id": "r", "results": [{"index": 0, "relevance_score": 0.9}], "meta": {}})
        return httpx.Response(401, json={"message": f"invalid api token {request.headers['authorization']}"})

    reranker = build_reranker(settings, http_client=httpx.Client(transport=httpx.MockTransport(cohere)))
    ctx = build_context(settings, reranker=reranker)
    ingest_zephyr(ctx, tmp_path)
    sid = ctx.sessions.create("cloud").id
    first = ctx.chat.ask("How many litres per minute?", sid)
    second = ctx.chat.ask("And what battery does it use?", sid)
    save_settings(ctx.settings)

    # The keys were really used...
    assert first.answer == "The pump delivers 42 litres per minute."
    assert second.condensed_question == "What battery does the Zephyr pump use?"
    assert {r["auth"] for r in FakeOpenAI.requests} == {f"Bearer {OPENAI_KEY}"}
    assert [c.headers["authorization"] for c in cohere_calls] == [f"Bearer {COHERE_KEY}"] * 2
    assert second.notices == [
        "Cohere rerank was skipped (the key was refused (HTTP 401)); passages are in retrieval order."
    ]
    # ...and went nowhere else.
    saved = json.loads((ctx.settings.data_dir / "settings.json").read_text())
    assert "top_k" in saved and not {"openai_api_key", "cohere_api_key"} & set(saved)
    turns = json.dumps([first.as_json(), second.as_json()])
    assert leaks(ctx.settings.data_dir, caplog.text, turns, repr(settings), str(settings)) == []
    assert "SECRET" not in "".join(r.getMessage() + repr(r.args) for r in caplog.records)


@pytest.mark.parametrize("status", ["401", "500"])
def test_a_failing_endpoint_gives_a_clear_error_without_the_key(keyed_env, tmp_path, caplog, status):
    caplog.set_level(logging.DEBUG)
    ctx = build_context(load_settings(), reranker=None)
    ingest_zephyr(ctx, tmp_path)
    sid = ctx.sessions.create("failing").id
    FakeOpenAI.mode = status  # the error body echoes "Bearer <key>"
    with pytest.raises(ProviderError) as e:
        ctx.chat.ask("How many litres per minute?", sid)
    message = str(e.value)
    assert message.startswith("The language model failed")
    assert f"Error code: {status}" in message and "Your question is kept; try again." in message
    assert [m.content for m in ctx.sessions.messages(sid)] == ["How many litres per minute?"]
    assert leaks(ctx.settings.data_dir, message, caplog.text) == []


@pytest.mark.slow  # two `python -m rag_core` processes
def test_the_cli_with_keys_in_the_environment_prints_and_logs_no_key(keyed_env, fake_openai, tmp_path):
    """The same through `python -m rag_core -v chat --json`: stdout, stderr (INFO logs) and files."""
    data = Path(keyed_env["DOCENT_DATA_DIR"])
    pdf = tmp_path / "zephyr.pdf"
    make_pdf(ZEPHYR_PAGES, pdf)
    env = {**os.environ, "CO_API_URL": f"http://127.0.0.1:{fake_openai.server_port}"}  # Cohere's base URL
    run = lambda *args, stdin=None: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "rag_core", "-v", *args], cwd=ROOT, env=env, input=stdin,
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    ingested = run("ingest", str(pdf), "--json")
    chat = run("chat", "--session", "cli", "--json", stdin="How many litres per minute?\nAnd the battery?\n")
    assert chat.returncode == 0, chat.stderr
    turns = [json.loads(line) for line in chat.stdout.splitlines()]
    assert [t["answer"] for t in turns] == ["The pump delivers 42 litres per minute."] * 2
    paths = [r["path"] for r in FakeOpenAI.requests]
    assert "/v2/rerank" in paths and "/v1/chat/completions" in paths  # both keys were in play
    assert {r["auth"] for r in FakeOpenAI.requests} == {f"Bearer {OPENAI_KEY}", f"Bearer {COHERE_KEY}"}
    assert "HTTP Request: POST" in chat.stderr  # the INFO logs were on
    assert leaks(data, ingested.stdout, ingested.stderr, chat.stdout, chat.stderr) == []


def test_an_echoed_bare_key_is_masked_in_the_error_message(monkeypatch, fake_openai, tmp_path):
    key = "ollama-SECRET789-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    settings = load_settings(
        llm_provider="openai",
        openai_base_url=f"http://127.0.0.1:{fake_openai.server_port}/v1",
        embed_provider="hash",
        data_dir=tmp_path / "data",
    )
    ctx = build_context(settings, reranker=None)
    ingest_zephyr(ctx, tmp_path)
    FakeOpenAI.mode, FakeOpenAI.echo = "401", "bare"
    with pytest.raises(ProviderError) as e:
        ctx.chat.ask("How many litres per minute?")
    assert key not in str(e.value)
