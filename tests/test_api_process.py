"""``python -m rag_core serve-api`` as a user runs it: a real process on a free loopback port,
documents uploaded through it, then the real ``openai`` client configured as a user would
(``base_url``, ``api_key``), streaming and not; and the start refused beyond loopback
without a key."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import openai
import pytest

from tests.conftest import free_port
from tests.pdfgen import ZEPHYR_PAGES, make_pdf

ROOT = Path(__file__).resolve().parents[1]
KEY = "test-key-0123456789"
pytestmark = pytest.mark.slow  # each test starts `python -m rag_core serve-api`


def env(data_dir: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "DOCENT_DATA_DIR": str(data_dir),
        "DOCENT_EMBED_PROVIDER": "hash",
        "DOCENT_LLM_PROVIDER": "extractive",
        **extra,
    }


@pytest.fixture
def server(tmp_path):
    port = free_port()
    log = (tmp_path / "server.log").open("w")
    p = subprocess.Popen(
        [sys.executable, "-m", "rag_core", "serve-api", "--port", str(port)],
        cwd=ROOT,
        env=env(tmp_path / "data", DOCENT_API_KEYS=KEY),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert p.poll() is None, (tmp_path / "server.log").read_text()
        try:
            if httpx.get(f"{base}/api/health", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.2)
    else:
        pytest.fail("serve-api did not answer within 120 s")
    yield base, tmp_path
    p.terminate()
    try:
        p.wait(20)
    except subprocess.TimeoutExpired:
        p.kill()
    log.close()
    assert KEY not in (tmp_path / "server.log").read_text()  # never logged


def upload(base: str, tmp_path: Path) -> None:
    make_pdf(ZEPHYR_PAGES, tmp_path / "zephyr.pdf")
    auth = {"Authorization": f"Bearer {KEY}"}
    with (tmp_path / "zephyr.pdf").open("rb") as f:
        r = httpx.post(f"{base}/api/documents", files={"files": ("zephyr.pdf", f)}, headers=auth, timeout=60)
    assert r.status_code == 202, r.text
    job = r.json()["id"]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        view = httpx.get(f"{base}/api/jobs/{job}", headers=auth, timeout=10).json()
        if view["state"] != "running":
            break
        time.sleep(0.2)
    assert view["state"] == "done" and view["files"][0]["result"]["status"] == "indexed", view


def test_the_openai_client_asks_through_serve_api_streaming_and_not(server):
    base, tmp_path = server
    upload(base, tmp_path)
    client = openai.OpenAI(base_url=f"{base}/v1", api_key=KEY, max_retries=0)
    assert [m.id for m in client.models.list()] == ["docent"]
    question = "How many litres per minute does the Zephyr pump deliver?"
    done = client.chat.completions.create(model="docent", messages=[{"role": "user", "content": question}])
    answer = done.choices[0].message.content
    assert answer and done.choices[0].finish_reason == "stop"
    extra = done.model_extra["docent"]
    assert extra["sources"][0]["file"] == "zephyr.pdf" and extra["sources"][0]["page"] == 2
    assert "42" in answer

    stream = client.chat.completions.create(
        model="docent",
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": question},
            {"role": "assistant", "content": answer},
            {"role": "user", "content": "And how much current does one draw?"},
        ],
        stream=True,
    )
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[0].model_extra["docent"]["sources"]  # the sources before the words
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert text.strip() and chunks[-1].choices[0].finish_reason == "stop"
    assert chunks[-1].model_extra["docent"]["timings"]["total_s"] > 0

    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=f"{base}/v1", api_key="wrong-key-000", max_retries=0).models.list()
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": question}])


def test_an_address_beyond_loopback_without_a_key_is_refused_at_start(tmp_path):
    p = subprocess.run(
        [sys.executable, "-m", "rag_core", "serve-api", "--host", "0.0.0.0", "--port", str(free_port())],
        cwd=ROOT,
        env=env(tmp_path / "data"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 2
    assert "Refusing to serve the API on 0.0.0.0 without a key" in p.stderr and "--api-key" in p.stderr
