"""The HTTP API served by a real uvicorn on a loopback port (in this process, in a thread):
ten clients asking at once are all answered, each stream in order, a client that does not
read holds up no one, and a client that goes away stops the model."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import httpx
import pytest
import uvicorn
from llama_index.core.base.llms.types import ChatMessage, ChatResponse, ChatResponseGen, MessageRole
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.llms.callbacks import llm_chat_callback

from rag_core import build_context
from rag_core.api import create_app
from tests.conftest import free_port
from tests.fakes import ScriptedLLM
from tests.pdfgen import ZEPHYR_PAGES, make_pdf

WORDS = 40


class EchoLLM(ScriptedLLM):
    """Answers ``TAG w1 … wN`` for the question's ``client-N`` tag, a word every ``pause``
    seconds; counts the words it wrote and whether its stream was closed early."""

    _written: list = PrivateAttr(default_factory=list)
    _closed: list = PrivateAttr(default_factory=list)
    _pause: float = PrivateAttr(default=0.01)

    @llm_chat_callback()
    def stream_chat(self, messages: Sequence[ChatMessage], **kw: Any) -> ChatResponseGen:
        found = re.findall(r"client-\d+", messages[-1].content or "")
        tag = found[-1] if found else "client-?"
        words = [tag] + [f"w{i}" for i in range(1, WORDS + 1)]
        acc = ""
        try:
            for word in words:
                time.sleep(self._pause)
                delta = word if not acc else " " + word
                acc += delta
                self._written.append(tag)
                yield ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=acc), delta=delta)
        except GeneratorExit:
            self._closed.append(tag)
            raise


@pytest.fixture
def served(make_settings, tmp_path) -> Iterator[tuple[str, Any, EchoLLM]]:
    llm = EchoLLM()
    ctx = build_context(make_settings(), llm=llm)
    make_pdf(ZEPHYR_PAGES, tmp_path / "zephyr.pdf")
    ctx.ingestion.ingest_paths([tmp_path / "zephyr.pdf"])
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(ctx), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started
    yield f"http://127.0.0.1:{port}", ctx, llm
    server.should_exit = True
    thread.join(15)


def sse_events(response: httpx.Response) -> Iterator[tuple[str, dict]]:
    kind = None
    for line in response.iter_lines():
        if line.startswith("event: "):
            kind = line[7:]
        elif line.startswith("data: ") and kind:
            yield kind, json.loads(line[6:])


def ask(base: str, sid: str, question: str) -> list[tuple[str, dict]]:
    with httpx.stream("POST", f"{base}/api/sessions/{sid}/messages", json={"question": question}, timeout=60) as r:
        assert r.status_code == 200
        return list(sse_events(r))


def test_ten_clients_at_once_are_all_answered_each_stream_in_order(served):
    base, ctx, llm = served
    llm._pause = 0.05  # an answer: 2 s of words; ten one after another: 20 s
    sids = [ctx.sessions.create(f"s{i}").id for i in range(10)]
    results: dict[int, list] = {}
    errors: list[BaseException] = []

    def client(i: int) -> None:
        try:
            results[i] = ask(base, sids[i], f"How many litres per minute does the Zephyr pump deliver, client-{i}?")
        except BaseException as e:
            errors.append(e)

    # an eleventh client asks, then reads nothing until the others are done
    slow = httpx.Client(base_url=base, timeout=60)
    idle = ctx.sessions.create("idle").id
    holding = slow.stream("POST", f"/api/sessions/{idle}/messages", json={"question": "pump flow, client-99?"})
    held = holding.__enter__()
    started = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    elapsed = time.perf_counter() - started
    assert errors == [] and len(results) == 10
    for i, events in results.items():
        kinds = [k for k, _ in events]
        assert kinds[0] == "sources" and kinds[-2:] == ["message", "done"]
        text = "".join(d["text"] for k, d in events if k == "token")
        expected = " ".join([f"client-{i}"] + [f"w{n}" for n in range(1, WORDS + 1)])
        assert text == expected  # every word, in order, none of another client's
        assert events[-2][1]["answer"] == expected
        stored = ctx.sessions.messages(sids[i])
        assert [m.role for m in stored] == ["user", "assistant"] and stored[1].content == expected
    # one answer takes WORDS pauses; ten one after another would take ten times that
    assert elapsed < 10 * (WORDS + 1) * 0.05 / 2
    rest = "".join(d.get("text", "") for k, d in sse_events(held) if k == "token")
    assert rest.startswith("client-99")  # the idle client still gets its whole answer
    holding.__exit__(None, None, None)
    slow.close()


def test_a_client_that_goes_away_stops_the_model_and_the_part_written_is_kept(served):
    base, ctx, llm = served
    llm._pause = 0.05  # 40 words: two seconds
    sid = ctx.sessions.create("leaving").id
    asked = {"question": "Zephyr pump, client-7?"}
    with httpx.stream("POST", f"{base}/api/sessions/{sid}/messages", json=asked, timeout=60) as r:
        for kind, _ in sse_events(r):
            if kind == "token":
                break  # the client goes away after the first word
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and len(ctx.sessions.messages(sid)) < 2:
        time.sleep(0.05)
    stored = ctx.sessions.messages(sid)
    assert [m.role for m in stored] == ["user", "assistant"]
    assert stored[1].meta.get("stopped") is True and stored[1].content.startswith("client-7")
    assert llm._closed == ["client-7"]  # the model's stream was closed: llama.cpp stops generating
    assert llm._written.count("client-7") < WORDS // 2
    while time.monotonic() < deadline and ctx.sessions.claims.holder(sid) is not None:
        time.sleep(0.05)  # the answer is stored first, then the session let go: a moment apart
    assert ctx.sessions.claims.holder(sid) is None  # the session is free for the next question


def test_a_second_question_in_the_session_waits_says_so_and_follows_the_first_answer(served):
    base, ctx, llm = served
    llm._pause = 0.03
    sid = ctx.sessions.create("one at a time").id
    first: list = []
    asking = threading.Thread(target=lambda: first.extend(ask(base, sid, "Zephyr pump flow, client-1?")))
    asking.start()
    deadline = time.monotonic() + 10
    while ctx.sessions.claims.holder(sid) is None and time.monotonic() < deadline:
        time.sleep(0.01)
    second = ask(base, sid, "And its current, client-2?")
    asking.join(30)
    assert second[0][0] == "waiting" and "answering another question" in second[0][1]["detail"]
    assert [k for k, _ in second][-2:] == ["message", "done"] and first[-1] == ("done", {"ok": True})
    stored = ctx.sessions.messages(sid)
    assert [m.role for m in stored] == ["user", "assistant", "user", "assistant"]
    assert stored[1].content.startswith("client-1") and stored[3].content == second[-2][1]["answer"]
    assert stored[2].content == "And its current, client-2?"  # asked after the first answer was stored


def test_a_silent_stream_gets_keep_alive_comments_that_clients_skip(served, monkeypatch):
    from rag_core.api import streaming

    base, ctx, llm = served
    monkeypatch.setattr(streaming, "PING_S", 0.02)
    llm._pause = 0.1
    sid = ctx.sessions.create("pings").id
    with httpx.stream("POST", f"{base}/api/sessions/{sid}/messages", json={"question": "pump, client-3?"}) as r:
        raw = r.read().decode()
    assert ": ping\n\n" in raw
    with httpx.stream("POST", f"{base}/api/sessions/{sid}/messages", json={"question": "pump, client-4?"}) as r:
        events = list(sse_events(r))
    assert [k for k, _ in events][-2:] == ["message", "done"]
