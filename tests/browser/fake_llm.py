"""A fake OpenAI-compatible endpoint on 127.0.0.1, for browser tests that need what the
offline extractive model does not do: an answer that cites its sources as ``[1]``, and one
slow enough to be stopped while it streams.

The Docent server under test uses it as its ``openai`` provider (a loopback base URL needs
no key). It answers from the numbered sources in the prompt's ``<documents>``, like the extractive
model, word by word, with the number of the source each sentence came from, and ``padding``
sentences to make it as long as a test needs; the words after the first padding sentence
come ``delay`` seconds apart (the answer's substance is out at once, then it streams as slowly
as a test needs, to stop it half-way). A non-streamed call (the rewrite of a follow-up) gets a
standalone question about Orion's budget.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

DOCUMENTS = re.compile(r"<documents>\n(.*?)\n</documents>\s*(.*)\Z", re.S)
SOURCE = re.compile(r"^\[(\d+)\] [^\n]*\n", re.M)  # "[1] orion.pdf, page 1", then the passage's lines
WORDS = re.compile(r"\w+")
# Padding sentences differ ("…, part 2."): a sentence written again word for word is a model going round
# in a loop, which the app stops (``chat.messages.repeating_from``); each still holds PADDING.
PADDING = "That is what the cited passages say about it"


def cited_answer(prompt: str, sentences: int = 2, padding: int = 1) -> str:
    """The ``sentences`` sentences of the numbered sources sharing most words with the
    question, each followed by its source's number; padded, so that it streams long."""
    found = DOCUMENTS.search(prompt)
    if not found:
        return "The documents don't say."
    documents, question = found.groups()
    asked = {w.lower() for w in WORDS.findall(question) if len(w) > 3}
    candidates = []
    starts = list(SOURCE.finditer(documents))
    for i, head in enumerate(starts):
        body = documents[head.end() : starts[i + 1].start() if i + 1 < len(starts) else len(documents)]
        for sentence in re.split(r"(?<=[.!?])\s+|\n+", body):
            if sentence.strip() and sentence.strip() != "…":
                candidates.append(({w.lower() for w in WORDS.findall(sentence)}, head.group(1), sentence))
    # a word of the question in few sentences says more than one in many ("budget" over "Orion")
    held = {w: sum(w in words for words, _, _ in candidates) for w in asked}
    scored = [
        (
            round(sum(1 / held[w] for w in asked & words), 6),
            max((1 / held[w] for w in asked & words), default=0.0),  # a tie: the rarest word's sentence
            -int(n),
            sentence.strip().rstrip("."),
            n,
        )
        for words, n, sentence in candidates
    ]
    best = sorted(scored, reverse=True)[:sentences]
    if not best:
        return "The documents don't say."
    return (
        " ".join(f"{s} [{n}]." for _, _, _, s, n in best)
        + " "
        + " ".join(f"{PADDING}, part {i + 1}." for i in range(padding))
    )


class FakeOpenAI(BaseHTTPRequestHandler):
    delay: ClassVar[float] = 0.0  # seconds between streamed words once the first padding sentence is out
    padding: ClassVar[int] = 1  # times the answer ends with PADDING (more: a longer answer)
    requests: ClassVar[list[dict]] = []

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        type(self).requests.append(body)
        messages = body.get("messages") or []
        last = next((str(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), "")
        if not body.get("stream"):
            text = "What was the budget of the Orion project?"
            reply = {"role": "assistant", "content": text}
            return self._json({"id": "c", "object": "chat.completion", "created": 0, "model": body.get("model"),
                               "choices": [{"index": 0, "message": reply, "finish_reason": "stop"}]})  # fmt: skip
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        try:
            answer = cited_answer(last, padding=self.padding)
            padded = answer.find(PADDING)
            slow_from = len(answer) if padded < 0 else padded + len(PADDING)  # the words from here come slowly
            for word in re.finditer(r"\S+\s*", answer):
                if word.start() >= slow_from:
                    time.sleep(self.delay)
                chunk = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": body.get("model"),
                         "choices": [{"index": 0, "delta": {"role": "assistant", "content": word.group()}}]}  # fmt: skip
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")
        except (BrokenPipeError, ConnectionResetError):  # the client stopped reading: Stop was pressed
            pass
        return None

    def _json(self, obj: dict) -> None:
        data = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@contextmanager
def fake_openai(delay: float = 0.0) -> Iterator[str]:
    """Serve the fake endpoint; yields its base URL (``http://127.0.0.1:PORT/v1``)."""
    FakeOpenAI.delay, FakeOpenAI.padding, FakeOpenAI.requests = delay, 1, []
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeOpenAI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1"
    finally:
        server.shutdown()
        server.server_close()
