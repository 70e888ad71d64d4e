"""``python -m rag_core serve-model`` (rag_core/serving.py): the real local model served once, and
Docent's OpenAI-compatible provider answering through it, as a team's app processes do."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from rag_core import build_context
from tests.conftest import ROOT, model_cache_dir

pytestmark = [pytest.mark.real_models, pytest.mark.slow, pytest.mark.timeout(900)]


def test_the_served_model_answers_docent_through_the_openai_provider(make_settings, three_docs, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "DOCENT_MODEL_CACHE": str(model_cache_dir())}
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rag_core",
            "--data-dir",
            str(tmp_path / "model"),
            "serve-model",
            "--port",
            str(port),
            "--json",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        ready = json.loads(server.stdout.readline())  # type: ignore[union-attr]
        assert ready["url"] == f"http://127.0.0.1:{port}/v1" and ready["model"] == "qwen2.5-coder-1.5b"
        settings = make_settings(
            llm_provider="openai", openai_base_url=ready["url"], openai_model=ready["model"], llm_max_new_tokens=48
        )
        ctx = build_context(settings)
        ctx.ingestion.ingest_paths([three_docs])
        turn = ctx.chat.ask("What colour are bananas?", ctx.sessions.create().id)
        assert "yellow" in turn.answer.lower()
        assert "bananas.txt" in {s["file"] for s in turn.sources}
    finally:
        server.terminate()
        server.wait(30)
